"""Long names and lost documents (issue 17, item 5): a legal 234-character document name is
stored and retrieved, and a case whose evidence document could not be stored fails with the
reason instead of being scored 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import CliRunner
from .conftest import jsonl_args, read_report, report_path, write_jsonl

LONG = "n" * 230 + ".txt"  # 234 characters: a legal file name (at most 255 bytes)


def _case(case_id: str, query: str, document_id: str) -> dict[str, object]:
    return {
        "case_id": case_id,
        "query": query,
        "evidence": [{"locator": {"document_id": document_id}}],
    }


@pytest.mark.slow
def test_a_234_character_document_name_is_stored_and_scored(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    docs = write_jsonl(
        tmp_path / "docs.jsonl",
        [
            {"document_id": "kelp", "name": LONG, "text": "The kelp forest grows fast."},
            {"document_id": "comet", "text": "A comet has a tail of dust."},
        ],
    )
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [_case("q1", "kelp forest", "kelp"), _case("q2", "comet tail", "comet")],
    )
    proc = run_cli(*jsonl_args(docs, cases))
    assert proc.returncode == 0, proc.stderr
    report = read_report(report_path(proc.stdout))
    assert report.run.document_errors == {}
    # Named otherwise than the other documents: listed in full with the key layout.
    assert report.run.document_keys.exceptions["kelp"].endswith("/kelp/" + LONG)
    assert report.run.document_key("kelp") == report.run.document_keys.exceptions["kelp"]
    by_case = {r.case_id: r for r in report.case_results}
    assert by_case["q1"].error is None and by_case["q1"].score("evidence_recall@1") == 1.0
    stored = tmp_path / "outputs"
    assert list(stored.rglob(LONG)) and not list(stored.rglob(f".{LONG[:60]}*.tmp"))


def test_a_case_whose_evidence_document_was_lost_fails_with_the_reason(
    run_cli: CliRunner, tmp_path: Path
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
    proc = run_cli(*jsonl_args(docs, cases))
    assert proc.returncode == 0, proc.stderr
    report = read_report(report_path(proc.stdout))
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
