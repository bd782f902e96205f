"""Shared fixtures: paths to the real datasets, a recipe from the real config, a CLI runner."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from heta_eval.kb import KnowledgeRecipe
from heta_eval.records import BenchmarkWorkspace

from .cli_in_process import CliResult, call_cli

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
SCIFACT = SHARED / "datasets" / "beir" / "scifact"


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a command a user runs: this one without MLflow's settings and
    without `PYTEST_CURRENT_TEST` (with it, MLflow turns on checks meant for its own test
    suite, which a user's run never has)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MLFLOW_") and k != "PYTEST_CURRENT_TEST"
    }
    return {**env, **extra}


def run_heta_eval(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m heta_eval ARGS` in `cwd` with everything under `cwd/outputs` (as `run_cli`),
    for a module-scoped fixture."""
    env = user_env(PYTHONWARNINGS="ignore::DeprecationWarning")
    flags = [a for a in args if a.startswith("-")]
    overrides = [a for a in args if not a.startswith("-")]
    return subprocess.run(
        [sys.executable, "-m", "heta_eval", *flags, f"paths.root={cwd / 'outputs'}", *overrides],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def job_logs(root: Path) -> str:
    """Every sweep job's `heta_eval.log` under `root`, to say why a job or a sweep failed."""
    return "\n".join(f"== {p}\n{p.read_text()}" for p in sorted(root.rglob("heta_eval.log")))


def load_recipe(name: str = "bm25", **overrides: object) -> KnowledgeRecipe:
    """A recipe from `conf/recipe/{name}.yaml`, as the CLI would build it."""
    spec = yaml.safe_load((REPO / "conf" / "recipe" / f"{name}.yaml").read_text())
    spec.update(overrides)
    spec["chunker"]["chunk_size"] = spec["chunk_size"]
    spec["chunker"]["chunk_overlap"] = spec["chunk_overlap"]
    return KnowledgeRecipe.model_validate(spec)


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Downloads, embeddings and judge verdicts go to a cache of this test session only."""
    path = tmp_path_factory.mktemp("heta-eval-cache")
    os.environ["HETA_EVAL_CACHE"] = str(path)
    return path


def load_benchmark(bench: object, tmp_path: Path, offline: bool = True) -> tuple[list, list, list]:
    """Prepare an adapter (offline unless told) and collect its documents, cases and units."""

    async def go() -> tuple[list, list, list]:
        prepared = await bench.prepare(BenchmarkWorkspace(root=tmp_path, offline=offline))  # type: ignore[attr-defined]
        return (
            [d async for d in bench.documents(prepared)],  # type: ignore[attr-defined]
            [c async for c in bench.cases(prepared)],  # type: ignore[attr-defined]
            [u async for u in bench.run_units(prepared)],  # type: ignore[attr-defined]
        )

    return asyncio.run(go())


@pytest.fixture
def bm25_recipe() -> KnowledgeRecipe:
    return load_recipe()


@pytest.fixture(scope="session")
def scifact_dir() -> Path:
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip(f"SciFact not found at {SCIFACT}")
    return SCIFACT


CliRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def run_cli(tmp_path: Path) -> CliRunner:
    """Run `python -m heta_eval ARGS` in a fresh directory with outputs under tmp_path."""

    def run(
        *args: str, root: Path | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        env = user_env(PYTHONWARNINGS="ignore::DeprecationWarning")
        flags = [a for a in args if a.startswith("-")]
        overrides = [a for a in args if not a.startswith("-")]
        root_override = f"paths.root={root or tmp_path / 'outputs'}"
        return subprocess.run(
            [sys.executable, "-m", "heta_eval", *flags, root_override, *overrides],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


InProcessCli = Callable[..., CliResult]


@pytest.fixture
def cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> InProcessCli:
    """Run `heta-eval ARGS` in this process, in tmp_path with outputs under tmp_path/outputs
    (`root=` another root; `program=` another console script, which gets no paths.root)."""

    def run(*args: str, root: Path | None = None, program: str = "heta-eval") -> CliResult:
        argv = list(args)
        if program == "heta-eval":
            flags = [a for a in args if a.startswith("-")]
            overrides = [a for a in args if not a.startswith("-")]
            argv = [*flags, f"paths.root={root or tmp_path / 'outputs'}", *overrides]
        return call_cli(program, argv, cwd=tmp_path, monkeypatch=monkeypatch, capsys=capsys)

    return run
