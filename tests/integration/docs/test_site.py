"""The documentation site builds without a warning (`mkdocs build --strict`, called in this
process), and the README stays a landing page that links into it."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from ...conftest import REPO

pytest.importorskip("mkdocs", reason="the docs tools come with the dev extra")


def test_the_docs_site_builds_strictly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    # What `mkdocs build --strict --site-dir DIR` does (mkdocs.__main__.build_command).
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    monkeypatch.chdir(REPO)
    config = load_config(config_file=str(REPO / "mkdocs.yml"), strict=True, site_dir=str(tmp_path))
    config.plugins.on_startup(command="build", dirty=False)
    try:
        with caplog.at_level(logging.WARNING, logger="mkdocs"):
            build(config)
    except Abort as exc:
        warnings = "\n".join(r.getMessage() for r in caplog.records)
        pytest.fail(f"{exc}\n{warnings[-4000:]}")
    finally:
        config.plugins.on_shutdown()
    api = (tmp_path / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    # The reference is drawn from the docstrings, not an empty page.
    assert "EvaluationReport" in api and "BenchmarkProtocol" in api


def test_the_readme_is_a_landing_page_whose_links_resolve() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if "://" not in target:
            assert (REPO / target).exists(), f"README links to {target}, which does not exist"
