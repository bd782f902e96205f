"""UDA's scoring, checked against examples worked by hand from the authors' definitions."""

from __future__ import annotations

import asyncio
import random

import pytest

from heta_eval.benchmarks.uda.evidence import (
    PageEvidenceRecallAtK,
    UdaEvidenceMatchAtK,
    evidence_match,
    lcs_coverage,
    lcs_length,
    normalize_evidence,
)
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkEvidence,
    BenchmarkExpected,
    QueryResponse,
    QueryResult,
    SourceRef,
)


def _response(*texts: str, answer: str | None = None, page: int | None = None) -> QueryResponse:
    results = tuple(
        QueryResult(
            id=f"d#{i}",
            text=text,
            score=1.0 / (i + 1),
            source=SourceRef(source_key="raw/d", document_id="d", page_index=page),
        )
        for i, text in enumerate(texts)
    )
    return QueryResponse(query="q", mode="bm25", results=results, answer=answer)


def _case(answers: tuple[str, ...] = ("x",), **metadata: object) -> BenchmarkCase:
    return BenchmarkCase(
        case_id="c1",
        query="q",
        expected=BenchmarkExpected(
            answers=answers,
            evidence=(BenchmarkEvidence(reference_id="d", locator={"document_id": "d"}),),
            metadata=dict(metadata),
        ),
    )


def _score(evaluator: object, case: BenchmarkCase, response: QueryResponse):  # type: ignore[no-untyped-def]
    return asyncio.run(evaluator.evaluate(case, response))  # type: ignore[attr-defined]


# --- evidence match ------------------------------------------------------------------------


def _dp_lcs(a: str, b: str) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        new = [0]
        for j, y in enumerate(b):
            new.append(row[j] + 1 if x == y else max(row[j + 1], new[j]))
        row = new
    return row[-1]


def test_lcs_length_is_the_longest_common_subsequence() -> None:
    assert lcs_length("ABCBDAB", "BDCABA") == 4  # BCBA (the textbook example)
    assert lcs_length(["the", "cat"], ["a", "cat", "the"]) == 1
    assert lcs_length("", "abc") == 0 and lcs_length("abc", "") == 0
    rng = random.Random(7)
    for _ in range(500):  # the bit-parallel form agrees with the quadratic table
        a = "".join(rng.choice("abcd") for _ in range(rng.randint(0, 40)))
        b = "".join(rng.choice("abcde") for _ in range(rng.randint(0, 40)))
        assert lcs_length(a, b) == _dp_lcs(a, b), (a, b)


def test_coverage_normalises_then_divides_by_the_evidence_length() -> None:
    # Lower-case, punctuation dropped, whitespace collapsed; articles stay (unlike SQuAD).
    assert normalize_evidence("The revenue, in 2019,\n was $5 million.") == (
        "the revenue in 2019 was 5 million"
    )
    # Evidence (7 words) against the retrieved text: "the revenue was 5 million" (5 words).
    retrieved = "In 2019 the company's revenue was 5 million dollars"
    assert lcs_coverage("The revenue, in 2019, was $5 million.", retrieved) == pytest.approx(5 / 7)
    # Characters (feta): "a b c d" (7) against "a x b c": "a b c" (5 characters).
    assert lcs_coverage("a b \nc d \n", "a x b c", level="char") == pytest.approx(5 / 7)
    assert lcs_coverage("!!!", "anything") is None  # nothing left to match: not 0.5


def test_items_are_averaged_per_group_then_over_groups() -> None:
    spec = {
        "level": "word",
        "groups": [
            [{"text": "alpha beta"}, {"text": "gamma"}],  # 1.0 and 0.0: 0.5
            [{"text": "alpha delta"}, {"text": "?"}],  # 0.5; the empty item is dropped
            [{"text": "gamma", "alternatives": ["beta"]}],  # the better form: 1.0
        ],
    }
    value, groups = evidence_match(spec, "alpha beta")
    assert groups == [0.5, 0.5, 1.0] and value == pytest.approx(2 / 3)
    assert evidence_match({"level": "word", "groups": [[{"text": ""}]]}, "x") == (None, [])


def test_evidence_match_reads_the_top_k_texts_joined() -> None:
    case = _case(uda_evidence={"level": "word", "groups": [[{"text": "beta gamma"}]]})
    response = _response("alpha", "beta", "gamma")
    scores = [_score(UdaEvidenceMatchAtK(k), case, response).value for k in (1, 2, 3)]
    assert scores == [0.0, 0.5, 1.0]
    skipped = _score(UdaEvidenceMatchAtK(3), _case(), response)
    assert skipped.value is None and skipped.skipped_reason == "no evidence text"


def test_document_only_evidence_cannot_discriminate_and_is_skipped() -> None:
    skipped = _score(PageEvidenceRecallAtK(5), _case(), _response("alpha"))
    assert skipped.value is None and "cannot discriminate" in (skipped.skipped_reason or "")
    paged = BenchmarkCase(
        case_id="c2",
        query="q",
        expected=BenchmarkExpected(
            evidence=(BenchmarkEvidence(locator={"document_id": "d", "page_index": 3}),)
        ),
    )
    assert _score(PageEvidenceRecallAtK(5), paged, _response("a", page=3)).value == 1.0
    assert _score(PageEvidenceRecallAtK(5), paged, _response("a", page=4)).value == 0.0
