"""Cases that fail are failures, never zeros: a query mode that raises for some cases, a case
whose evidence document could not be stored (issue 17, item 5), a knowledge base with nothing
indexed. Those cases carry an EvaluationError, the others are scored, the summary counts both;
`runner.max_failure_rate` turns too many failures into a failed run whose report is still
written and logged, and a run whose cases all failed is a failed run, saying why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import InProcessCli
from .conftest import (
    jsonl_args,
    mlflow_runs,
    read_report,
    report_path,
    small_benchmark,
    write_jsonl,
)

# The real BM25 index, refusing queries that contain "boom" (tests/faulty_components.py).
FAULTY_INDEX = [
    "~recipe.indexes.bm25",
    "+recipe.indexes.bm25={_target_:tests.faulty_components.QueryFailsOnWord,word:boom}",
]


@pytest.fixture
def faulty(tmp_path: Path) -> list[str]:
    """CLI arguments: 10 cases of which 4 (q0, q3, q6, q9) make the index raise."""
    docs, cases = small_benchmark(tmp_path, cases=10, boom_every=3)
    return [*jsonl_args(docs, cases), *FAULTY_INDEX]


def test_failing_cases_are_recorded_and_the_rest_scored(
    cli: InProcessCli, tmp_path: Path, faulty: list[str]
) -> None:
    done = cli(*faulty)
    assert done.returncode == 0, done.stderr
    assert "10 case results (4 failed)" in done.stdout
    report = read_report(report_path(done.stdout))
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
    cli: InProcessCli, tmp_path: Path, faulty: list[str]
) -> None:
    done = cli(*faulty, "runner.max_failure_rate=0.25")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert (
        "4 of 10 case results failed (40.0%: 4 at query), more than "
        "runner.max_failure_rate=0.25; 6 were scored and the report was still written"
    ) in done.stderr
    (report_file,) = (tmp_path / "outputs").rglob("runs/*/*/report.json")
    assert len(read_report(report_file).failed_cases) == 4
    (run,) = mlflow_runs(tmp_path / "outputs")
    assert run.info.status == "FAILED"
    assert run.data.metrics["bm25.evidence_recall_at_1.scored"] == 6

    # Within the threshold, the same configuration finishes from its journal: the scored
    # results are replayed, the failed ones are queried again (and fail again here).
    again = cli(*faulty, "runner.max_failure_rate=0.5")
    assert again.returncode == 0, again.stderr
    report = read_report(report_path(again.stdout))
    assert report.run.resumed_cases == 6 and report.run.retried_cases == 4
    assert len(report.failed_cases) == 4


def test_a_run_whose_cases_all_failed_exits_1_whatever_max_failure_rate_says(
    cli: InProcessCli, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the build cache's directory should be")
    done = cli("runner.limit=4", f"runner.cache_dir={blocker}/cache", "runner.max_failure_rate=1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "4 of 4 case results failed (all of them: 4 at build)" in done.stderr
    # The most frequent reason, with its count, on the terminal; the summary still printed.
    assert "most frequent failure reasons:\n  4x build: " in done.stdout
    assert "4x build: " in done.stderr and "Traceback" not in done.stderr
    report = read_report(report_path(done.stdout))  # kept
    assert len(report.failed_cases) == 4
    (run,) = mlflow_runs(tmp_path / "outputs")
    assert run.info.status == "FAILED"


def test_metrics_without_a_score_say_why_on_the_terminal(cli: InProcessCli) -> None:
    done = cli("evaluator=with_answers", "runner.limit=3", "tracking=none")
    assert done.returncode == 0, done.stderr
    assert "bm25.answer_f1: no score, skipped: 3x no answer generated" in done.stdout


def _case(case_id: str, query: str, document_id: str) -> dict[str, object]:
    return {
        "case_id": case_id,
        "query": query,
        "evidence": [{"locator": {"document_id": document_id}}],
    }


def test_a_case_whose_evidence_document_was_lost_fails_with_the_reason(
    cli: InProcessCli, tmp_path: Path
) -> None:
    (tmp_path / "comet.txt").write_text("A comet has a tail of dust.")
    docs = write_jsonl(
        tmp_path / "docs.jsonl",
        [
            {"document_id": "kelp", "text": "The kelp forest grows fast."},
            {"document_id": "comet", "path": "comet.txt"},
            {"document_id": "gone", "path": "gone.txt"},  # inside the data dir, but missing
        ],
    )
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [_case("q1", "kelp forest", "kelp"), _case("q2", "glacier ice", "gone")],
    )
    done = cli(*jsonl_args(docs, cases), "tracking=none")
    assert done.returncode == 0, done.stderr
    report = read_report(report_path(done.stdout))
    assert "FileNotFoundError" in report.run.document_errors["gone"]
    by_case = {r.case_id: r for r in report.case_results}
    assert by_case["q1"].error is None and by_case["q1"].score("evidence_recall@1") == 1.0
    lost = by_case["q2"]
    assert lost.error is not None and lost.scores == ()
    assert lost.error.error_type == "EvidenceDocumentLost"
    assert "'gone' could not be stored" in lost.error.message
    assert "FileNotFoundError" in lost.error.message
    # Not a scored 0: recall@1 is the mean over the one case that could be scored.
    assert report.run.cases.failed == 1 and report.run.cases.scored == 1
    assert report.score_details["bm25.evidence_recall@1"].failed == 1
    assert report.score_summary["bm25.evidence_recall@1"] == 1.0


@pytest.mark.slow
def test_a_knowledge_base_with_nothing_indexed_fails_its_cases_and_is_not_cached(
    cli: InProcessCli, tmp_path: Path
) -> None:
    docs, cases = small_benchmark(tmp_path, cases=3)
    rows = [json.loads(line) for line in docs.read_text().splitlines()]
    for row in rows:
        row["media_type"] = "application/x-klingon"  # no parser reads it
    write_jsonl(docs, rows)
    root = tmp_path / "outputs"
    args = (*jsonl_args(docs, cases), "tracking=none")
    done = cli(*args)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "3 of 3 case results failed (all of them: 3 at build)" in done.stderr
    assert "nothing indexed: none of the 10 documents gave any text to index" in done.stderr
    report = read_report(report_path(done.stdout))
    message = report.case_results[0].error.message  # type: ignore[union-attr]
    assert "no parser for media type 'application/x-klingon'" in message
    errors = {r.error.error_type for r in report.case_results if r.error is not None}
    assert errors == {"EmptyKnowledgeBaseError"} and len(report.failed_cases) == 3
    assert "bm25.ndcg@10" not in report.score_summary
    assert not [p for p in (root / "cache" / "kb").glob("*/*") if not p.name.startswith(".")]
    again = cli(*args)
    assert again.returncode == 1
    assert "already evaluated" not in again.stdout + again.stderr
