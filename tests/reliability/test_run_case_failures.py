"""A query mode that raises for some cases: those cases carry an EvaluationError, the others
are scored, the summary counts both, and `runner.max_failure_rate` turns too many failures
into a failed run whose report is still written and logged."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import REPO, CliRunner
from .conftest import jsonl_args, mlflow_runs, read_report, report_path, small_benchmark

# The real BM25 index, refusing queries that contain "boom" (tests/faulty_components.py).
FAULTY_INDEX = [
    "~recipe.indexes.bm25",
    "+recipe.indexes.bm25={_target_:tests.faulty_components.QueryFailsOnWord,word:boom}",
]


@pytest.fixture
def faulty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """CLI arguments: 10 cases of which 4 (q0, q3, q6, q9) make the index raise."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # so that `tests.faulty_components` imports
    docs, cases = small_benchmark(tmp_path, cases=10, boom_every=3)
    return [*jsonl_args(docs, cases), *FAULTY_INDEX]


def test_failing_cases_are_recorded_and_the_rest_scored(
    run_cli: CliRunner, tmp_path: Path, faulty: list[str]
) -> None:
    proc = run_cli(*faulty)
    assert proc.returncode == 0, proc.stderr
    assert "10 case results (4 failed)" in proc.stdout
    report = read_report(report_path(proc.stdout))
    failed = {r.case_id: r.error for r in report.failed_cases}
    assert sorted(failed) == ["q0", "q3", "q6", "q9"]
    assert all(e is not None and e.stage == "query" for e in failed.values())
    assert all(e.error_type == "RuntimeError" and "boom" in e.message for e in failed.values())
    assert report.run.cases.model_dump() == {"total": 10, "evaluated": 10, "failed": 4, "scored": 6}
    detail = report.score_details["bm25.evidence_recall@1"]
    assert (detail.scored, detail.failed) == (6, 4)
    assert report.score_summary["bm25.evidence_recall@1"] == 1.0  # failures are not zeros
    (run,) = mlflow_runs(tmp_path / "outputs")
    assert run.info.status == "FINISHED"
    assert run.data.metrics["bm25.evidence_recall_at_1.failed"] == 4


@pytest.mark.slow
def test_more_failures_than_max_failure_rate_fail_the_run_but_keep_the_report(
    run_cli: CliRunner, tmp_path: Path, faulty: list[str]
) -> None:
    proc = run_cli(*faulty, "runner.max_failure_rate=0.25")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert (
        "4 of 10 case results failed (40.0%: 4 at query), more than "
        "runner.max_failure_rate=0.25; 6 were scored and the report was still written"
    ) in proc.stderr
    (report_file,) = (tmp_path / "outputs").rglob("runs/*/*/report.json")
    assert len(read_report(report_file).failed_cases) == 4
    (run,) = mlflow_runs(tmp_path / "outputs")
    assert run.info.status == "FAILED"
    assert run.data.metrics["bm25.evidence_recall_at_1.scored"] == 6

    # Within the threshold, the same configuration finishes from its journal: the scored
    # results are replayed, the failed ones are queried again (and fail again here).
    again = run_cli(*faulty, "runner.max_failure_rate=0.5")
    assert again.returncode == 0, again.stderr
    report = read_report(report_path(again.stdout))
    assert report.run.resumed_cases == 6 and report.run.retried_cases == 4
    assert len(report.failed_cases) == 4
