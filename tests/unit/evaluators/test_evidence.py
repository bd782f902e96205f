"""Evidence is matched by locator, reference id or text, in the matcher's mode, and the
evidence metrics score what was found below the document (pages) in order."""

from __future__ import annotations

import asyncio
import math

import pytest

from heta_eval.evaluators import (
    AllEvidenceAtK,
    EvidenceMatcher,
    EvidenceNDCGAtK,
    EvidenceRecallAtK,
    evidence_matches,
    evidence_metrics,
)
from heta_eval.records import BenchmarkEvidence
from tests.unit.evaluators.scoring import make_case, make_response, make_result, score_of


def test_locator_match_needs_every_known_field() -> None:
    on_page = BenchmarkEvidence(
        locator={"document_id": "ADI_2009", "page_index": 48, "note": "ignored"}
    )
    assert evidence_matches(on_page, make_result("ADI_2009", page=48))
    assert not evidence_matches(on_page, make_result("ADI_2009", page=47))
    assert not evidence_matches(on_page, make_result("ADI_2009"))
    assert evidence_matches(
        BenchmarkEvidence(locator={"page_index": "48"}), make_result("X", page=48)
    )


def test_reference_id_then_text_are_used_when_the_locator_names_nothing_known() -> None:
    by_ref = BenchmarkEvidence(reference_id="d#3", locator={"custom": 1})
    assert evidence_matches(by_ref, make_result("d", chunk=3))
    assert evidence_matches(BenchmarkEvidence(reference_id="d"), make_result("d", chunk=9))
    by_text = BenchmarkEvidence(text="Net  Sales grew")
    assert evidence_matches(by_text, make_result("x", text="In 2009 net sales grew by 4%."))
    assert not evidence_matches(by_text, make_result("x", text="Net sales fell."))


def test_evidence_recall_at_k() -> None:
    evidence = (
        BenchmarkEvidence(locator={"document_id": "a"}),
        BenchmarkEvidence(locator={"document_id": "b"}),
    )
    response = make_response(make_result("a"), make_result("c"), make_result("b"))
    case = make_case(evidence=evidence)
    assert score_of(EvidenceRecallAtK(k=1), case, response) == 0.5
    assert score_of(EvidenceRecallAtK(k=3), case, response) == 1.0
    skipped = asyncio.run(EvidenceRecallAtK(k=3).evaluate(make_case(), response))
    assert skipped.value is None and skipped.skipped_reason == "no evidence labels"
    assert EvidenceRecallAtK(k=5).name == "evidence_recall@5"


def test_matcher_modes() -> None:
    evidence = BenchmarkEvidence(locator={"document_id": "a"}, text="otters rest in kelp beds")
    same_doc_fact = make_result("a", text="At night otters rest in kelp beds, wrapped up.")
    same_doc_other = make_result("a", text="Nothing about it.")
    other_doc_fact = make_result("b", text="otters rest in kelp beds")
    both = EvidenceMatcher("locator_and_text")
    assert both.matches(evidence, same_doc_fact)
    assert not both.matches(evidence, same_doc_other) and not both.matches(evidence, other_doc_fact)
    assert EvidenceMatcher("text").matches(evidence, other_doc_fact)
    assert EvidenceMatcher("locator").matches(evidence, same_doc_other)
    cut = make_result("a", text="otters rest in kelp")
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
    case = make_case(evidence=evidence)
    # Ranks: page 5 (miss), page 3 (hit), page 3 again (same item), page 9 (judged not relevant).
    response = make_response(
        make_result("r", 0, page=5),
        make_result("r", 1, page=3),
        make_result("r", 2, page=3),
        make_result("r", 3, page=9),
    )
    scores = {
        e.name: score_of(e, case, response)
        for e in evidence_metrics(metrics=["recall", "precision", "ndcg", "mrr", "all"], ks=[2, 4])
    }
    assert scores["evidence_recall@2"] == 0.5 and scores["evidence_recall@4"] == 0.5
    assert scores["evidence_precision@2"] == 0.5 and scores["evidence_precision@4"] == 0.5
    assert scores["evidence_mrr@2"] == 0.5
    # One new item found at rank 2; ideal: two items at ranks 1 and 2.
    assert scores["evidence_ndcg@4"] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert scores["all_evidence@4"] == 0.0
    found_all = make_response(make_result("r", 0, page=7), make_result("r", 1, page=3))
    assert score_of(AllEvidenceAtK(k=2), case, found_all) == 1.0
    assert score_of(EvidenceNDCGAtK(k=2), case, found_all) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown evidence metrics"):
        evidence_metrics(metrics=["f1"])
