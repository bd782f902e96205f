"""What importing a module loads, seen in a fresh interpreter: the console scripts' modules
and the leaf modules keep MLflow, the index code and other heavy packages out until used."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ..conftest import REPO

# A fresh interpreter per check: in this process every heavy module is already imported.
pytestmark = pytest.mark.slow


def _loaded(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    return proc.stdout.strip()


def test_importing_the_cli_loads_no_mlflow_or_index_code() -> None:
    heavy = "{'mlflow', 'bm25s', 'pandas', 'httpx', 'matplotlib', 'pypdf'}"
    assert _loaded(f"import sys, heta_eval.cli; print(sorted({heavy} & set(sys.modules)))") == "[]"


def test_info_imports_no_heavy_packages() -> None:
    code = (
        "import sys; from heta_eval.cli.info import render; "
        "from heta_eval.config import config_dir; "
        "render(config_dir()); "
        "print(sorted({'mlflow', 'torch', 'pandas', 'heta_framework', 'httpx'} & set(sys.modules)))"
    )
    assert _loaded(code) == "[]"


def test_importing_compare_loads_no_mlflow_scipy_or_matplotlib() -> None:
    heavy = "{'mlflow', 'scipy', 'matplotlib'}"
    code = f"import sys, heta_eval.cli.compare; print(sorted({heavy} & set(sys.modules)))"
    assert _loaded(code) == "[]"


def test_endpoints_import_neither_httpx_nor_the_evaluators() -> None:
    code = (
        "import sys, heta_eval.endpoints, heta_eval.kb.answering, heta_eval.kb.rerank, "
        "heta_eval.kb.index.encoders; "
        "print(sorted(m for m in ('httpx', 'heta_eval.evaluators') if m in sys.modules))"
    )
    assert _loaded(code) == "[]"


def test_the_store_module_imports_without_the_engine() -> None:
    # The writer process starts with `python -m heta_eval.kb.store_writer`: nothing heavy.
    code = (
        "import sys, heta_eval.kb.store_writer\n"
        "heavy = sorted(m for m in ('pydantic', 'bm25s', 'numpy', 'heta_eval.records')"
        " if m in sys.modules)\n"
        "print(heavy)\n"
    )
    assert _loaded(code) == "[]"
