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
