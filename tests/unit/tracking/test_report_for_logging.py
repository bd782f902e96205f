"""The report the MLflow tracker logs keeps the retrieved items its case table shows: the
chunks of the first five distinct documents of each case, no more."""

from __future__ import annotations

from datetime import UTC, datetime

from heta_eval.records import (
    BenchmarkManifest,
    EvaluationCaseResult,
    EvaluationReport,
    RetrievedItem,
    RunFacts,
    StoredDocumentKeys,
)
from heta_eval.tracking.mlflow_tracker import TOP_DOCUMENTS, case_table, report_for_logging

MANIFEST = BenchmarkManifest(name="uda_fin", split="test", build_scope="case")


def _report_with(items: tuple[RetrievedItem, ...]) -> EvaluationReport:
    now = datetime.now(UTC)
    result = EvaluationCaseResult(
        case_id="c1", unit_id="u", query_mode="bm25", query="q", retrieved=items
    )
    keys = StoredDocumentKeys(prefix="raw/benchmarks/b/test/", name_suffix=".txt", stored=2)
    return EvaluationReport(
        report_id="r1",
        benchmark=MANIFEST,
        knowledge_base_name="kb",
        knowledge_base_manifests=(),
        recipe_manifest={"name": "bm25"},
        query_modes=("bm25",),
        score_summary={},
        case_results=(result,),
        started_at=now,
        finished_at=now,
        run=RunFacts(
            top_k=10,
            cases={"total": 1, "evaluated": 1, "failed": 0, "scored": 1},
            document_keys=keys,
        ),
    )


def test_the_tracker_gets_the_retrieved_items_its_case_table_shows() -> None:
    # Chunks of the same documents repeat: the table shows the first five distinct ones.
    documents = ["a", "a", "b", "c", "b", "d", "e", "e", "f", "g"]
    items = tuple(
        RetrievedItem(id=f"{d}#{i}", score=10.0 - i, document_id=d) for i, d in enumerate(documents)
    )
    report = _report_with(items)
    sent = report_for_logging(report)
    assert len({i.document_id for i in sent.case_results[0].retrieved}) == TOP_DOCUMENTS == 5
    assert sent.case_results[0].retrieved == items[:8]
    assert case_table(sent) == case_table(report)
    assert sent.model_copy(update={"case_results": report.case_results}) == report
    few = _report_with(items[:3])
    assert report_for_logging(few).case_results[0] is few.case_results[0]
