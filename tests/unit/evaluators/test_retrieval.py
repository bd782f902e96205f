"""Retrieval metrics by hand: nDCG with graded relevance, recall counting each document once,
and a positive k."""

from __future__ import annotations

import math

import pytest

from heta_eval.evaluators import EvidenceRecallAtK, NDCGAtK, RecallAtK
from heta_eval.records import BenchmarkCase, BenchmarkEvidence
from tests.unit.evaluators.scoring import make_case, make_response, make_result, score_of


def _graded(**grades: int) -> BenchmarkCase:
    return make_case(
        evidence=tuple(
            BenchmarkEvidence(locator={"document_id": d}, metadata={"relevance": g})
            for d, g in grades.items()
        )
    )


def test_ndcg_matches_a_hand_computation_with_graded_relevance() -> None:
    case = _graded(a=2, b=1, c=0)
    # Chunk hits: x, then two chunks of b (first counts), then a.
    response = make_response(
        make_result("x"), make_result("b", 0), make_result("b", 1), make_result("a")
    )
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert score_of(NDCGAtK(k=10), case, response) == pytest.approx(dcg / idcg, abs=1e-12)
    exp_dcg = 1 / math.log2(3) + 3 / math.log2(4)
    exp_idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert score_of(NDCGAtK(k=10, gain="exponential"), case, response) == pytest.approx(
        exp_dcg / exp_idcg
    )
    assert score_of(NDCGAtK(k=1), case, response) == 0.0
    # Judged but nothing relevant: 0, as trec_eval; no judgments at all: skipped.
    assert score_of(NDCGAtK(k=10), _graded(c=0), response) == 0.0
    assert score_of(NDCGAtK(k=10), make_case(), response) is None


def test_recall_at_k_counts_documents_once() -> None:
    case = _graded(a=1, b=1)
    response = make_response(make_result("a", 0), make_result("a", 1), make_result("b"))
    assert score_of(RecallAtK(k=2), case, response) == 1.0
    assert score_of(RecallAtK(k=1), case, response) == 0.5


@pytest.mark.parametrize(
    "factory", [lambda: EvidenceRecallAtK(k=0), lambda: NDCGAtK(k=-1), lambda: RecallAtK(k=0)]
)
def test_k_must_be_positive(factory: object) -> None:
    with pytest.raises(ValueError, match=r"k must be a number within \[1, 100000\]"):
        factory()  # type: ignore[operator]
