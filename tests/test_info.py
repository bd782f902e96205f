"""`heta-eval --info`: every option of the config groups with a description, before Hydra runs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from heta_eval.cli.info import extra_requirements

from .conftest import REPO, CliRunner

CONF = REPO / "conf"


def _option_lines(stdout: str, group: str) -> dict[str, str]:
    """`name -> description` of the options listed under `group`'s heading."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split(" (default")[0] == group)
    options = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        if line.startswith("  ") and not line.startswith("    "):
            name, _, description = line.strip().partition(" ")
            options[name] = description.strip()
    return options


def test_info_lists_every_benchmark_recipe_and_evaluator_with_a_description(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    proc = run_cli("--info")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for group in ("benchmark", "recipe", "evaluator"):
        listed = _option_lines(out, group)
        files = sorted(p.stem for p in (CONF / group).glob("*.yaml"))
        assert sorted(listed) == files
        for name, description in listed.items():
            assert description and description != "(no description)", (group, name)
    assert "benchmark (default: sample)" in out and "recipe (default: bm25)" in out
    for group in ("tracking", "experiment", "hparams_search", "hydra/launcher"):
        assert sorted(_option_lines(out, group)) == sorted(
            p.stem for p in (CONF / group).glob("*.yaml")
        )
    recipes = _option_lines(out, "recipe")
    assert recipes["bm25_fusion"] == "RRF fusion of stemmed and unstemmed BM25"
    assert _option_lines(out, "tracking")["none"].startswith("A tracker that records nothing")
    assert "runner.dry_run" in out and "runner.progress" in out
    assert not (tmp_path / "outputs").exists()  # Hydra never started


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_info_says_which_extra_a_recipe_needs_instead_of_failing(run_cli: CliRunner) -> None:
    proc = run_cli("--info")
    assert proc.returncode == 0, proc.stderr
    recipes = _option_lines(proc.stdout, "recipe")
    for name in ("dense", "hybrid"):
        assert "[needs extra 'dense' (missing: " in recipes[name] and "torch" in recipes[name]
    assert "needs" not in recipes["bm25"]


def test_extras_come_from_the_project_declaration() -> None:
    extras = extra_requirements(CONF)
    assert {"torch", "sentence-transformers"} <= set(extras["dense"])
    assert "heta-framework" in extras["heta"]


def test_info_imports_no_heavy_packages_and_help_mentions_it(run_cli: CliRunner) -> None:
    code = (
        "import sys; from heta_eval.cli.info import render; "
        "from heta_eval.config import config_dir; "
        "render(config_dir()); "
        "print(sorted({'mlflow', 'torch', 'pandas', 'heta_framework', 'httpx'} & set(sys.modules)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
    help_text = run_cli("--help")
    assert help_text.returncode == 0 and "heta-eval --info lists" in help_text.stdout
