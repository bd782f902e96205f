"""Evaluators score cases correctly, skip what does not apply, and match evidence in order."""

from __future__ import annotations

import asyncio
import math

import pytest

from heta_eval.evaluators import (
    AllEvidenceAtK,
    AnswerContains,
    AnswerExactMatch,
    AnswerNumericMatch,
    AnswerTokenF1,
    EvidenceMatcher,
    EvidenceNDCGAtK,
    EvidenceRecallAtK,
    NDCGAtK,
    RecallAtK,
    evidence_matches,
    evidence_metrics,
    normalize_answer,
    token_f1,
)
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkEvidence,
    BenchmarkExpected,
    QueryResponse,
    QueryResult,
    SourceRef,
)


def _result(doc: str, chunk: int = 0, text: str = "", page: int | None = None) -> QueryResult:
    return QueryResult(
        id=f"{doc}#{chunk}",
        text=text,
        score=1.0,
        source=SourceRef(
            source_key=f"raw/benchmarks/b/test/{doc}/{doc}.txt",
            document_id=doc,
            chunk_id=f"{doc}#{chunk}",
            chunk_index=chunk,
            page_index=page,
        ),
    )


def _response(*results: QueryResult, answer: str | None = None) -> QueryResponse:
    return QueryResponse(query="q", mode="bm25", results=results, answer=answer)


def _case(
    answers: tuple[str, ...] = (), evidence: tuple[BenchmarkEvidence, ...] = ()
) -> BenchmarkCase:
    return BenchmarkCase(
        case_id="c", query="q", expected=BenchmarkExpected(answers=answers, evidence=evidence)
    )


def _score(evaluator: object, case: BenchmarkCase, response: QueryResponse) -> float | None:
    return asyncio.run(evaluator.evaluate(case, response)).value  # type: ignore[attr-defined]


def test_locator_match_needs_every_known_field() -> None:
    on_page = BenchmarkEvidence(
        locator={"document_id": "ADI_2009", "page_index": 48, "note": "ignored"}
    )
    assert evidence_matches(on_page, _result("ADI_2009", page=48))
    assert not evidence_matches(on_page, _result("ADI_2009", page=47))
    assert not evidence_matches(on_page, _result("ADI_2009"))
    assert evidence_matches(BenchmarkEvidence(locator={"page_index": "48"}), _result("X", page=48))


def test_reference_id_then_text_are_used_when_the_locator_names_nothing_known() -> None:
    by_ref = BenchmarkEvidence(reference_id="d#3", locator={"custom": 1})
    assert evidence_matches(by_ref, _result("d", chunk=3))
    assert evidence_matches(BenchmarkEvidence(reference_id="d"), _result("d", chunk=9))
    by_text = BenchmarkEvidence(text="Net  Sales grew")
    assert evidence_matches(by_text, _result("x", text="In 2009 net sales grew by 4%."))
    assert not evidence_matches(by_text, _result("x", text="Net sales fell."))


def test_evidence_recall_at_k() -> None:
    evidence = (
        BenchmarkEvidence(locator={"document_id": "a"}),
        BenchmarkEvidence(locator={"document_id": "b"}),
    )
    response = _response(_result("a"), _result("c"), _result("b"))
    case = _case(evidence=evidence)
    assert _score(EvidenceRecallAtK(k=1), case, response) == 0.5
    assert _score(EvidenceRecallAtK(k=3), case, response) == 1.0
    skipped = asyncio.run(EvidenceRecallAtK(k=3).evaluate(_case(), response))
    assert skipped.value is None and skipped.skipped_reason == "no evidence labels"
    assert EvidenceRecallAtK(k=5).name == "evidence_recall@5"


def test_squad_normalisation_and_exact_match() -> None:
    assert normalize_answer("The  Answer, is: 42!") == "answer is 42"
    case = _case(answers=("Marine protected areas",))
    assert _score(AnswerExactMatch(), case, _response(answer="marine protected areas.")) == 1.0
    assert _score(AnswerExactMatch(), case, _response(answer="protected areas")) == 0.0
    assert _score(AnswerExactMatch(), case, _response()) is None


def test_answer_contains_on_answer_and_on_context() -> None:
    case = _case(answers=("four",))
    assert _score(AnswerContains(), case, _response(answer="He found four moons.")) == 1.0
    assert _score(AnswerContains(), case, _response(answer="fourteen")) == 0.0
    context = AnswerContains(target="context", k=2)
    assert context.name == "context_has_answer@2"
    hit = _response(_result("a", text="none"), _result("b", text="Galileo saw four moons"))
    assert _score(context, case, hit) == 1.0
    late = _response(_result("a"), _result("b"), _result("c", text="four"))
    assert _score(context, case, late) == 0.0


def _graded(**grades: int) -> BenchmarkCase:
    return _case(
        evidence=tuple(
            BenchmarkEvidence(locator={"document_id": d}, metadata={"relevance": g})
            for d, g in grades.items()
        )
    )


def test_ndcg_matches_a_hand_computation_with_graded_relevance() -> None:
    case = _graded(a=2, b=1, c=0)
    # Chunk hits: x, then two chunks of b (first counts), then a.
    response = _response(_result("x"), _result("b", 0), _result("b", 1), _result("a"))
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert _score(NDCGAtK(k=10), case, response) == pytest.approx(dcg / idcg, abs=1e-12)
    exp_dcg = 1 / math.log2(3) + 3 / math.log2(4)
    exp_idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert _score(NDCGAtK(k=10, gain="exponential"), case, response) == pytest.approx(
        exp_dcg / exp_idcg
    )
    assert _score(NDCGAtK(k=1), case, response) == 0.0
    # Judged but nothing relevant: 0, as trec_eval; no judgments at all: skipped.
    assert _score(NDCGAtK(k=10), _graded(c=0), response) == 0.0
    assert _score(NDCGAtK(k=10), _case(), response) is None


def test_recall_at_k_counts_documents_once() -> None:
    case = _graded(a=1, b=1)
    response = _response(_result("a", 0), _result("a", 1), _result("b"))
    assert _score(RecallAtK(k=2), case, response) == 1.0
    assert _score(RecallAtK(k=1), case, response) == 0.5


@pytest.mark.parametrize(
    "factory", [lambda: EvidenceRecallAtK(k=0), lambda: NDCGAtK(k=-1), lambda: RecallAtK(k=0)]
)
def test_k_must_be_positive(factory: object) -> None:
    with pytest.raises(ValueError, match="k must be a positive integer"):
        factory()  # type: ignore[operator]


@pytest.mark.parametrize(
    ("answer", "expected", "hit"),
    [
        ("About 57.5% of the assets.", ("57%", "0.57484"), 1.0),
        ("0.57484", ("57%",), 1.0),
        ("The ratio is 0.60", ("57%", "0.57484"), 0.0),
        ("-26.7%", ("-27.0%", "-0.26689"), 1.0),
        ("26.7%", ("-27.0%", "-0.26689"), 0.0),
        ("$ 17,966 million", ("17966.0",), 1.0),
        ("(1,234.5)", ("-1234.5",), 1.0),
        ("380", ("380", "3.8"), 1.0),
        ("Yes.", ("yes",), 1.0),
        ("no", ("yes",), 0.0),
        ("no number here", ("42",), 0.0),
    ],
)
def test_numeric_answer_match(answer: str, expected: tuple[str, ...], hit: float) -> None:
    evaluator = AnswerNumericMatch()
    assert _score(evaluator, _case(answers=expected), _response(answer=answer)) == hit


def test_numeric_tolerance_is_configurable() -> None:
    case = _case(answers=("100.0",))
    assert _score(AnswerNumericMatch(rel_tol=0.05), case, _response(answer="104.0")) == 1.0
    assert _score(AnswerNumericMatch(rel_tol=0.01), case, _response(answer="104.0")) == 0.0
    assert _score(AnswerNumericMatch(), case, _response()) is None


def test_matcher_modes() -> None:
    evidence = BenchmarkEvidence(locator={"document_id": "a"}, text="otters rest in kelp beds")
    same_doc_fact = _result("a", text="At night otters rest in kelp beds, wrapped up.")
    same_doc_other = _result("a", text="Nothing about it.")
    other_doc_fact = _result("b", text="otters rest in kelp beds")
    both = EvidenceMatcher("locator_and_text")
    assert both.matches(evidence, same_doc_fact)
    assert not both.matches(evidence, same_doc_other) and not both.matches(evidence, other_doc_fact)
    assert EvidenceMatcher("text").matches(evidence, other_doc_fact)
    assert EvidenceMatcher("locator").matches(evidence, same_doc_other)
    cut = _result("a", text="otters rest in kelp")
    assert not both.matches(evidence, cut)
    assert EvidenceMatcher("locator_and_text", min_text_overlap=0.8).matches(evidence, cut)
    with pytest.raises(ValueError, match="mode must be one of"):
        EvidenceMatcher("fuzzy")  # type: ignore[arg-type]


def test_evidence_metrics_below_the_document() -> None:
    evidence = (
        BenchmarkEvidence(locator={"document_id": "r", "page_index": 3}),
        BenchmarkEvidence(locator={"document_id": "r", "page_index": 7}),
        BenchmarkEvidence(locator={"document_id": "r", "page_index": 9}, metadata={"relevance": 0}),
    )
    case = _case(evidence=evidence)
    # Ranks: page 5 (miss), page 3 (hit), page 3 again (same item), page 9 (judged not relevant).
    response = _response(
        _result("r", 0, page=5),
        _result("r", 1, page=3),
        _result("r", 2, page=3),
        _result("r", 3, page=9),
    )
    scores = {
        e.name: _score(e, case, response)
        for e in evidence_metrics(metrics=["recall", "precision", "ndcg", "mrr", "all"], ks=[2, 4])
    }
    assert scores["evidence_recall@2"] == 0.5 and scores["evidence_recall@4"] == 0.5
    assert scores["evidence_precision@2"] == 0.5 and scores["evidence_precision@4"] == 0.5
    assert scores["evidence_mrr@2"] == 0.5
    # One new item found at rank 2; ideal: two items at ranks 1 and 2.
    assert scores["evidence_ndcg@4"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert scores["all_evidence@4"] == 0.0
    found_all = _response(_result("r", 0, page=7), _result("r", 1, page=3))
    assert _score(AllEvidenceAtK(k=2), case, found_all) == 1.0
    assert _score(EvidenceNDCGAtK(k=2), case, found_all) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown evidence metrics"):
        evidence_metrics(metrics=["f1"])


def test_token_f1() -> None:
    assert token_f1("the marine protected areas", "Marine protected areas") == 1.0
    assert token_f1("protected areas", "marine protected areas") == pytest.approx(0.8)
    assert token_f1("", "x") == 0.0
    case = _case(answers=("four moons", "4"))
    assert _score(AnswerTokenF1(), case, _response(answer="four")) == pytest.approx(2 / 3)
