"""Fixtures of the in-process tests: runs made once per test process that many tests read
(a tracked `heta-eval` run of the sample benchmark, an untracked BM25 run of SciFact)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.entities import Run

from heta_eval.records import EvaluationReport

from ..cli_in_process import CliResult, call_cli_once
from .runs import printed_report, tracked_runs


@dataclass(frozen=True)
class SharedRun:
    """A `heta-eval` run under `root`: what it printed, its report, its MLflow run (the
    store's only run when the fixture made it; None when untracked)."""

    root: Path
    cli: CliResult
    report: EvaluationReport
    tracked: Run | None

    @property
    def run_dir(self) -> Path:
        return Path(self.report.run.output_dir or "")


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """The default evaluation (sample benchmark, bm25, tracked in SQLite), once per process.
    Tests read it; the few that evaluate again on its root (from its caches) add runs there,
    so a test finds this run by its id, never as the store's only run."""
    cwd = tmp_path_factory.mktemp("sample-run")
    root = cwd / "outputs"
    result = call_cli_once("heta-eval", [f"paths.root={root}", "runner.progress=off"], cwd=cwd)
    assert result.returncode == 0, result.stderr
    (tracked,) = tracked_runs(root)
    return SharedRun(root, result, printed_report(result.stdout), tracked)


@pytest.fixture(scope="session")
def scifact_bm25(scifact_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> SharedRun:
    """`heta-eval benchmark=beir benchmark.data_root=SCIFACT recipe=bm25 tracking=none`, once
    per process (its `tracked` is None: nothing tracked)."""
    cwd = tmp_path_factory.mktemp("scifact-bm25")
    root = cwd / "outputs"
    args = [f"paths.root={root}", "benchmark=beir", "benchmark.dataset=scifact"]
    args += [f"benchmark.data_root={scifact_dir}", "recipe=bm25", "tracking=none"]
    result = call_cli_once("heta-eval", args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return SharedRun(root, result, printed_report(result.stdout), None)
