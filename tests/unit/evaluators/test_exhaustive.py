"""Metrics that cannot fail on a case are skipped with their reason, decided per case from
what the runner says the knowledge base holds (`QueryResponse.scope`)."""

from __future__ import annotations

import asyncio
from typing import Any

from heta_eval.benchmarks.uda.evidence import (
    EXTENSION_NOTE,
    ONE_PAGE_REASON,
    PAGES_KEY,
    PageEvidenceRecallAtK,
    UdaEvidenceMatchAtK,
)
from heta_eval.evaluators.evidence import AllEvidenceAtK, EvidenceNDCGAtK, EvidenceRecallAtK
from heta_eval.evaluators.exhaustive import exhaustive_reason
from heta_eval.evaluators.retrieval import NDCGAtK, RecallAtK
from heta_eval.evaluators.summary import summarize
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkEvidence,
    BenchmarkExpected,
    EvaluationCaseResult,
    KnowledgeBaseScope,
    QueryResponse,
    QueryResult,
    SourceRef,
)


def _response(items: int | None, documents: int | None = 1, n: int = 2) -> QueryResponse:
    results = tuple(
        QueryResult(
            id=f"d#{i}",
            text=f"revenue grew {i}",
            score=1.0 / (i + 1),
            source=SourceRef(source_key="raw/d", document_id="d", page_index=0),
        )
        for i in range(n)
    )
    scope = None if items is None else KnowledgeBaseScope(items=items, documents=documents)
    return QueryResponse(query="q", mode="bm25", results=results, scope=scope)


def _case(pages: int | None = None) -> BenchmarkCase:
    metadata = {PAGES_KEY: pages} if pages is not None else {}
    evidence = BenchmarkEvidence(
        reference_id="d", locator={"document_id": "d", "page_index": 0}, metadata=metadata
    )
    spec = {"level": "word", "groups": [[{"text": "revenue grew"}]]}
    return BenchmarkCase(
        case_id="c",
        query="q",
        expected=BenchmarkExpected(evidence=(evidence,), metadata={"uda_evidence": spec}),
    )


def _score(evaluator: Any, case: BenchmarkCase, response: QueryResponse) -> Any:
    return asyncio.run(evaluator.evaluate(case, response))


def test_a_top_k_holding_the_whole_knowledge_base_is_skipped() -> None:
    for evaluator in (UdaEvidenceMatchAtK(5), AllEvidenceAtK(5), EvidenceRecallAtK(5)):
        skipped = _score(evaluator, _case(), _response(items=5))
        assert skipped.value is None, evaluator.name
        assert skipped.skipped_reason == exhaustive_reason(5)
        assert skipped.details == {"items": 5}
        # One more item than k: the ranking decides what is in the top k.
        assert _score(evaluator, _case(), _response(items=6)).value == 1.0, evaluator.name
        # Nothing known of the knowledge base (no runner): scored.
        assert _score(evaluator, _case(), _response(items=None)).value == 1.0


def test_order_sensitive_and_trec_eval_metrics_are_kept() -> None:
    # nDCG still depends on the ranking; the document-level metrics stay trec_eval's.
    for evaluator in (NDCGAtK(5), EvidenceNDCGAtK(5), RecallAtK(5)):
        assert _score(evaluator, _case(), _response(items=2)).value == 1.0, evaluator.name


def test_page_recall_on_a_one_page_knowledge_base_is_skipped() -> None:
    recall = PageEvidenceRecallAtK(1)
    one_page = _score(recall, _case(pages=1), _response(items=30, documents=1))
    assert one_page.value is None and one_page.skipped_reason == ONE_PAGE_REASON
    # Two page documents, or a document of unknown length: the page can be missed.
    assert _score(recall, _case(pages=1), _response(items=30, documents=2)).value == 1.0
    assert _score(recall, _case(), _response(items=30, documents=1)).value == 1.0


def test_tat_evidence_match_is_labelled_our_extension() -> None:
    ours = UdaEvidenceMatchAtK(3, extension=True)
    assert ours.name == "uda_evidence_match_ext@3"
    assert _score(ours, _case(), _response(items=10)).details["note"] == EXTENSION_NOTE
    assert UdaEvidenceMatchAtK(3).name == "uda_evidence_match@3"


def test_the_summary_says_how_many_cases_each_metric_could_discriminate() -> None:
    results = []
    for i, items in enumerate((2, 9, 12)):
        score = _score(EvidenceRecallAtK(5), _case(), _response(items=items))
        results.append(
            EvaluationCaseResult(
                case_id=f"c{i}", unit_id=f"u{i}", query_mode="bm25", query="q", scores=(score,)
            )
        )
    _, details = summarize(results, ["bm25"], ["evidence_recall@5"], resamples=10)
    detail = details["bm25.evidence_recall@5"]
    assert (detail.scored, detail.skipped) == (2, 1)
    assert detail.skipped_reasons == {exhaustive_reason(5): 1}
