"""The documentation site builds without a warning (`mkdocs build --strict`), and the README
stays a landing page that links into it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

pytest.importorskip("mkdocs", reason="the docs tools come with the dev extra")


def test_the_docs_site_builds_strictly(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    api = (tmp_path / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    # The reference is drawn from the docstrings, not an empty page.
    assert "EvaluationReport" in api and "BenchmarkProtocol" in api


def test_the_readme_is_a_landing_page_whose_links_resolve() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if "://" not in target:
            assert (REPO / target).exists(), f"README links to {target}, which does not exist"
