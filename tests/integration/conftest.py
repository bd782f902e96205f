"""Fixtures of the in-process tests: one tracked `heta-eval` run of the sample benchmark,
made once per test process, that many tests read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.entities import Run

from heta_eval.records import EvaluationReport

from ..cli_in_process import CliResult, call_cli_once
from .runs import printed_report, tracked_runs


@dataclass(frozen=True)
class SampleRun:
    """`heta-eval runner.progress=off` under `root`: what it printed, its report, its
    MLflow run (the store's only run when the fixture made it)."""

    root: Path
    cli: CliResult
    report: EvaluationReport
    tracked: Run

    @property
    def run_dir(self) -> Path:
        return Path(self.report.run.output_dir or "")


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> SampleRun:
    """The default evaluation (sample benchmark, bm25, tracked in SQLite), once per process.
    Tests read it; a test that runs more commands on its root finds this run by its id (the
    store then holds more runs), and expects no other test's runs there but its own."""
    cwd = tmp_path_factory.mktemp("sample-run")
    root = cwd / "outputs"
    result = call_cli_once("heta-eval", [f"paths.root={root}", "runner.progress=off"], cwd=cwd)
    assert result.returncode == 0, result.stderr
    (tracked,) = tracked_runs(root)
    return SampleRun(root, result, printed_report(result.stdout), tracked)
