"""The case table MLflow shows for a run: each case's first distinct retrieved documents,
in retrieval order (chunks of one document count once)."""

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
from heta_eval.tracking.projection import TOP_DOCUMENTS, case_table

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


def test_the_case_table_shows_the_first_distinct_documents_of_each_case() -> None:
    # Chunks of the same documents repeat: the table shows the first five distinct ones.
    documents = ["a", "a", "b", "c", "b", "d", "e", "e", "f", "g"]
    items = tuple(
        RetrievedItem(id=f"{d}#{i}", score=10.0 - i, document_id=d) for i, d in enumerate(documents)
    )
    assert TOP_DOCUMENTS == 5
    assert case_table(_report_with(items))["top_documents"] == ["a b c d e"]
    assert case_table(_report_with(items[:3]))["top_documents"] == ["a b"]
