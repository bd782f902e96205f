"""UDA's scoring, checked against examples worked by hand from the authors' definitions."""

from __future__ import annotations

import asyncio
import random

import pytest

from heta_eval.evaluators.uda_answers import (
    FetaAnswerF1,
    FinQAExactMatch,
    NqAnswerF1,
    QasperAnswerF1,
    TatQAExactMatch,
    TatQAF1,
    finqa_exact_match,
    qasper_f1,
    squad_f1,
    tatqa_em_f1,
)
from heta_eval.evaluators.uda_evidence import (
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


# --- answers -----------------------------------------------------------------------------


def test_finqa_exact_match_of_the_executed_answer() -> None:
    gold = ["0.57484", "57%"]
    assert finqa_exact_match("The answer is: 57%", gold) == 1.0  # 0.57 is within 1%
    assert finqa_exact_match("about 0.575 of the total", gold) == 1.0  # its last number
    assert finqa_exact_match("0.58", gold) == 1.0  # |0.58 - 0.57484| / 0.5774 < 0.01
    assert finqa_exact_match("0.59", gold) == 0.0
    assert finqa_exact_match("57.5", gold) == 0.0  # 57.5 is not 57% (no percent sign)
    assert finqa_exact_match("Yes.", ["yes", "yes"]) == 1.0
    assert finqa_exact_match("no", ["yes", "yes"]) == 0.0
    assert finqa_exact_match("", gold) == 0.0


def test_tatqa_exact_match_and_f1_keep_the_scale() -> None:
    assert tatqa_em_f1("92,500", ["92500"], "") == (1.0, 1.0)
    # A percent answer: gold 12.35 percent is 0.1235; "12.35%" and the bare 0.1235 match.
    assert tatqa_em_f1("12.35%", ["12.35"], "percent") == (1.0, 1.0)
    assert tatqa_em_f1("0.1235", ["12.35"], "percent") == (1.0, 1.0)
    assert tatqa_em_f1("12.35", ["12.35"], "percent") == (0.0, 0.0)
    # A thousand-scaled integer: 1234 thousand is written 1234000.
    assert tatqa_em_f1("1,234,000", ["1234"], "thousand") == (1.0, 1.0)
    assert tatqa_em_f1("1234", ["1234"], "thousand") == (0.0, 0.0)
    # Text spans: bag-of-words F1 (2 of 3 predicted words, both gold words): 0.8.
    assert tatqa_em_f1("certain benefits.", ["certain benefits"], "") == (1.0, 1.0)
    assert tatqa_em_f1("certain health benefits", ["certain benefits"], "") == (0.0, 0.8)


def test_token_f1_metrics_of_paper_feta_and_nq() -> None:
    assert qasper_f1("Yes, they do.", ["yes"]) == 1.0  # aligned to the yes/no reference
    # "a BiLSTM model" -> {bilstm, model}; vs "BiLSTM with attention": P 1/2, R 1/3 -> 0.4.
    assert qasper_f1("a BiLSTM model", ["BiLSTM with attention", "an LSTM"]) == pytest.approx(0.4)
    # 4 predicted tokens all in the 8-token reference: P 1, R 1/2 -> 2/3.
    reference = "In 2016, Platt played the role of Evan Hansen."
    assert squad_f1("Platt played Evan Hansen", reference) == pytest.approx(2 / 3)
    assert squad_f1("", reference) == 0.0


def test_answer_evaluators_read_each_subsets_gold() -> None:
    fin = _case(("57%", "0.57484"), uda_answer={"str_answer": "57%", "exe_answer": "0.57484"})
    assert _score(FinQAExactMatch(), fin, _response(answer="57%")).value == 1.0
    tat = _case(
        ("12.35",), uda_answer={"answer": 12.35, "answer_type": "arithmetic", "scale": "percent"}
    )
    assert _score(TatQAExactMatch(), tat, _response(answer="12.35%")).value == 1.0
    assert _score(TatQAF1(), tat, _response(answer="12.35")).value == 0.0
    nq_gold = {"short_answer": "Congress", "long_answer": "Congress sets the size of the court"}
    nq = _case(("Congress",), uda_answer=nq_gold)
    assert _score(NqAnswerF1(), nq, _response(answer="Congress")).value == 1.0
    # Long answer {congress, sets, size, of, court} vs {size, is, set, by, law}: 1 in 5.
    assert _score(NqAnswerF1(), nq, _response(answer="the size is set by law")).value == (
        pytest.approx(0.2)
    )
    paper = _case(("BiLSTM with attention", "an LSTM"))
    assert _score(QasperAnswerF1(), paper, _response(answer="a BiLSTM model")).value == (
        pytest.approx(0.4)
    )
    feta = _case(("In 2016, Platt played the role of Evan Hansen.",))
    assert _score(FetaAnswerF1(), feta, _response(answer="Platt played Evan Hansen")).value == (
        pytest.approx(2 / 3)
    )
    # The prediction is what follows UDA's "The answer is:".
    assert _score(
        FetaAnswerF1(), feta, _response(answer="So... The answer is: Platt played Evan Hansen")
    ).value == pytest.approx(2 / 3)
    unanswered = _score(NqAnswerF1(), nq, _response("context only"))
    assert unanswered.value is None and unanswered.skipped_reason == "no answer generated"
