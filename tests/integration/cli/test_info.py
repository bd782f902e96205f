"""`heta-eval-info`: every option of the config groups, including those of a
`hydra.searchpath` folder, marked with it; the extras a recipe needs."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

from heta_eval.cli.info import extra_requirements

from ...cli_in_process import CliResult
from ...conftest import REPO, InProcessCli

CONF = REPO / "conf"
EXAMPLES_CONF = REPO / "examples" / "conf"


def _info(cli: InProcessCli, *overrides: str) -> CliResult:
    return cli(*overrides, program="heta-eval-info")


def _option_lines(stdout: str, group: str) -> dict[str, str]:
    """`name -> description` of the options listed under `group`'s heading."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split(" (default")[0] == group)
    options: dict[str, str] = {}
    name = ""
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        if line.startswith("  ") and not line.startswith("    "):
            name, _, description = line.strip().partition(" ")
            options[name] = description.strip()
        elif name and len(line) - len(line.lstrip()) > 4:  # a description wrapped at 120
            options[name] += " " + line.strip()
        else:
            name = ""
    return options


def test_info_lists_every_benchmark_recipe_and_evaluator_with_a_description(
    cli: InProcessCli, tmp_path: Path
) -> None:
    proc = _info(cli)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for group in ("benchmark", "recipe", "evaluator"):
        listed = _option_lines(out, group)
        files = sorted(p.stem for p in (CONF / group).glob("*.yaml"))
        assert sorted(listed) == files
        for name, description in listed.items():
            assert description and description != "(no description)", (group, name)
            assert "[from " not in description
    assert "benchmark (default: sample)" in out and "recipe (default: bm25)" in out
    for group in ("tracking", "experiment", "hparams_search", "hydra/launcher"):
        assert sorted(_option_lines(out, group)) == sorted(
            p.stem for p in (CONF / group).glob("*.yaml")
        )
    recipes = _option_lines(out, "recipe")
    assert recipes["bm25_fusion"] == "RRF fusion of stemmed and unstemmed BM25"
    assert _option_lines(out, "tracking")["none"].startswith("A tracker that records nothing")
    assert "runner.dry_run" in out and "runner.progress" in out
    assert "hydra.searchpath" not in out
    assert not (tmp_path / "outputs").exists()


def test_info_lists_a_searchpath_folders_options_marked_with_it(
    cli: InProcessCli, tmp_path: Path
) -> None:
    # Relative to the directory it starts in, as Hydra takes it (the guide's example).
    (tmp_path / "mine" / "recipe").mkdir(parents=True)
    (tmp_path / "mine" / "recipe" / "bm25_small.yaml").write_text(
        "defaults:\n  - bm25\n  - _self_\nname: bm25_small\n"
        "description: BM25 over 64-word chunks, my own\nchunk_size: 64\n"
    )
    # An option the bundled folder also has: Hydra takes the bundled one (first on the path).
    (tmp_path / "mine" / "recipe" / "bm25.yaml").write_text("description: shadowed\n")
    searchpath = f"hydra.searchpath=[file://{EXAMPLES_CONF},file://mine]"
    proc = _info(cli, searchpath)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    mark = f"[from file://{EXAMPLES_CONF}]"
    assert f"and file://{EXAMPLES_CONF} (hydra.searchpath)" in out
    assert "and file://mine (hydra.searchpath)" in out
    benchmarks = _option_lines(out, "benchmark")
    assert benchmarks["rivers"].endswith(mark) and "five Markdown documents" in benchmarks["rivers"]
    assert "[from" not in benchmarks["sample"]
    recipes = _option_lines(out, "recipe")
    for name in ("paragraphs", "sentence_fusion"):
        assert recipes[name].endswith(mark), recipes[name]
    assert recipes["bm25_small"] == "BM25 over 64-word chunks, my own  [from file://mine]"
    assert recipes["bm25"].startswith("BM25 over fixed-size") and "[from" not in recipes["bm25"]
    assert _option_lines(out, "evaluator")["answer_rank"].endswith(mark)

    # What is listed is what heta-eval composes with the same search path.
    composed = cli("--cfg=job", searchpath, "recipe=bm25_small")
    assert composed.returncode == 0, composed.stderr
    assert "name: bm25_small" in composed.stdout and "chunk_size: 64" in composed.stdout


def test_info_refuses_a_searchpath_folder_that_does_not_exist(
    cli: InProcessCli, tmp_path: Path
) -> None:
    proc = _info(cli, "hydra.searchpath=[file://no_such_conf]")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"heta-eval-info: hydra.searchpath: file://no_such_conf: no such folder "
        f"({tmp_path / 'no_such_conf'})"
    )
    assert proc.stdout == ""


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_info_says_which_extra_a_recipe_needs_instead_of_failing(cli: InProcessCli) -> None:
    proc = _info(cli)
    assert proc.returncode == 0, proc.stderr
    recipes = _option_lines(proc.stdout, "recipe")
    for name in ("dense", "hybrid"):
        assert "[needs extra 'dense' (missing: " in recipes[name] and "torch" in recipes[name]
    assert "needs" not in recipes["bm25"]


def test_extras_come_from_the_project_declaration() -> None:
    extras = extra_requirements(CONF)
    assert {"torch", "sentence-transformers"} <= set(extras["dense"])
    assert "heta-framework" in extras["heta"]


def test_the_console_script_is_declared() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["heta-eval-info"] == "heta_eval.cli.info:main"
