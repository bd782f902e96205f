"""Hydra's own flags on `heta-eval`, and `heta-eval-info`: every option of the config groups.

`heta-eval --info`, `--cfg`, `--help` and `-sc` must print exactly what any Hydra app with
the same config prints: each is compared with a plain `@hydra.main` app over `conf/`.
`heta-eval-info` (run as `python -m heta_eval.cli.info`, what the console script calls)
lists the options, including those of a `hydra.searchpath` folder, marked with it.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from heta_eval.cli.info import extra_requirements

from .conftest import REPO, user_env

CONF = REPO / "conf"
EXAMPLES_CONF = REPO / "examples" / "conf"

PLAIN_HYDRA_APP = f"""
import hydra

@hydra.main(version_base="1.3", config_path={str(CONF)!r}, config_name="config")
def app(cfg):
    raise SystemExit("the task ran")

app()
"""


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = user_env(PYTHONWARNINGS="ignore::DeprecationWarning", PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _info(cwd: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    return _run(["-m", "heta_eval.cli.info", *overrides], cwd)


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


# Each Hydra flag and mode as a user types it, with parts of Hydra's own output that show
# that the mode ran (not our listing).
HYDRA_FLAGS: list[tuple[list[str], tuple[str, ...]]] = [
    (["--info"], ("Config search path", "Defaults Tree", "Config\n******")),
    (["--info", "all"], ("Installed Hydra Plugins", "Defaults Tree", "Config\n******")),
    (["--info", "defaults-tree"], ("Defaults Tree", "hparams_search: null", "launcher: basic")),
    (["--info", "defaults"], ("Defaults List", "benchmark/sample")),
    (["--info", "searchpath"], ("Config search path", "| main     | file://")),
    (["--info", "plugins"], ("Installed Hydra Plugins", "OptunaSweeper", "JoblibLauncher")),
    (["--info", "config"], ("Config\n******", "  _target_: heta_eval.benchmarks.SampleBenchmark")),
    (
        ["--info=searchpath", f"hydra.searchpath=[file://{EXAMPLES_CONF}]"],
        (f"| hydra.searchpath in command-line | file://{EXAMPLES_CONF} |",),
    ),
    (["--cfg", "job"], ("benchmark:\n  _target_: heta_eval.benchmarks.SampleBenchmark",)),
    (["--cfg", "hydra"], ("hydra:\n  run:\n", "MlflowSweepCallback")),
    (["--cfg", "all", "recipe=bm25_fusion"], ("hydra:\n", "name: bm25_fusion")),
    (["-c", "job", "--resolve", "paths.root=/data/out"], ("root: /data/out", "/data/out/store")),
    (["--help"], ("== Configuration groups ==", "heta-eval-info lists", "bm25_optuna")),
    (["--hydra-help"], ("Hydra (1.", "--info,-i")),
    (["-sc", "install=bash"], ("hydra_bash_completion()", "complete -o nospace -o default -F")),
]


def _stable(text: str) -> str:
    """Hydra's output without the plugin scan's timings (they differ between processes, and
    order its table; a slow scan widens its column, so runs of spaces and dashes count as
    one) and with the program's name (`sys.argv[0]`) as the plain app's."""
    text = text.replace(str(REPO / "heta_eval" / "__main__.py"), "app.py")
    kept = (s for s in text.splitlines() if not re.search(r"\d\.\d{3}\b", s))
    return "\n".join(re.sub(r"-{2,}", "-", re.sub(r" {2,}", " ", s)) for s in kept)


@pytest.mark.parametrize(
    ("flags", "expected"), HYDRA_FLAGS, ids=[" ".join(f)[:40] for f, _ in HYDRA_FLAGS]
)
def test_hydra_flags_print_what_any_hydra_app_prints(
    flags: list[str], expected: tuple[str, ...], tmp_path: Path
) -> None:
    (tmp_path / "app.py").write_text(PLAIN_HYDRA_APP)
    ours = _run(["-m", "heta_eval", *flags], tmp_path)
    plain = _run(["app.py", *flags], tmp_path)
    assert ours.returncode == 0, ours.stderr
    assert plain.returncode == 0, plain.stderr
    assert "the task ran" not in ours.stderr + plain.stderr
    assert _stable(ours.stdout) == _stable(plain.stdout)
    for part in expected:
        assert part in ours.stdout, (flags, part)
    assert "choose an option with GROUP=NAME" not in ours.stdout  # not our listing
    assert not (tmp_path / "outputs").exists()  # nothing ran: no run directory, no MLflow


def test_info_lists_every_benchmark_recipe_and_evaluator_with_a_description(
    tmp_path: Path,
) -> None:
    proc = _info(tmp_path)
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


def test_info_lists_a_searchpath_folders_options_marked_with_it(tmp_path: Path) -> None:
    # Relative to the directory it starts in, as Hydra takes it (the guide's example).
    (tmp_path / "mine" / "recipe").mkdir(parents=True)
    (tmp_path / "mine" / "recipe" / "bm25_small.yaml").write_text(
        "defaults:\n  - bm25\n  - _self_\nname: bm25_small\n"
        "description: BM25 over 64-word chunks, my own\nchunk_size: 64\n"
    )
    # An option the bundled folder also has: Hydra takes the bundled one (first on the path).
    (tmp_path / "mine" / "recipe" / "bm25.yaml").write_text("description: shadowed\n")
    searchpath = f"hydra.searchpath=[file://{EXAMPLES_CONF},file://mine]"
    proc = _info(tmp_path, searchpath)
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
    composed = _run(["-m", "heta_eval", "--cfg", "job", searchpath, "recipe=bm25_small"], tmp_path)
    assert composed.returncode == 0, composed.stderr
    assert "name: bm25_small" in composed.stdout and "chunk_size: 64" in composed.stdout


def test_info_refuses_a_searchpath_folder_that_does_not_exist(tmp_path: Path) -> None:
    proc = _info(tmp_path, "hydra.searchpath=[file://no_such_conf]")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"heta-eval-info: hydra.searchpath: file://no_such_conf: no such folder "
        f"({tmp_path / 'no_such_conf'})"
    )
    assert proc.stdout == ""


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed")
def test_info_says_which_extra_a_recipe_needs_instead_of_failing(tmp_path: Path) -> None:
    proc = _info(tmp_path)
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
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["heta-eval-info"] == "heta_eval.cli.info:main"


def test_info_imports_no_heavy_packages() -> None:
    code = (
        "import sys; from heta_eval.cli.info import render; "
        "from heta_eval.config import config_dir; "
        "render(config_dir()); "
        "print(sorted({'mlflow', 'torch', 'pandas', 'heta_framework', 'httpx'} & set(sys.modules)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
