"""UDA answers in UDA's own response format, scored by hand from the authors' `uda/eval` code.

Each case names a real question of the bench files (its gold answer as the file writes it);
the expected value is worked out from the authors' definitions in the comment beside it.
examples/uda_side_by_side.py runs their code and ours on 68,000 such pairs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from heta_eval.benchmarks.uda.answers import (
    ANSWER_KEY,
    LEFT_OUT_REASON,
    NO_ANSWERS_REASON,
    AnswerOptions,
    FetaAnswerF1,
    FinQAExactMatch,
    NqAnswerF1,
    QasperAnswerF1,
    TatQAExactMatch,
    TatQAF1,
)
from heta_eval.benchmarks.uda.finance_reading import round_half_even, to_number
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkExpected,
    KnowledgeBaseScope,
    QueryResponse,
)


def _case(gold: dict[str, Any]) -> BenchmarkCase:
    return BenchmarkCase(
        case_id="c",
        query="q",
        expected=BenchmarkExpected(answers=("x",), metadata={ANSWER_KEY: gold}),
    )


def _value(
    evaluator: Any, gold: dict[str, Any], answer: str | None, answers: bool | None = None
) -> float | None:
    scope = KnowledgeBaseScope(answers=answers) if answers is not None else None
    response = QueryResponse(query="q", mode="llm", answer=answer, scope=scope)
    return asyncio.run(evaluator.evaluate(_case(gold), response)).value


# fin GS/2016/page_79.pdf-3
GS = {"str_answer": "57%", "exe_answer": "0.57484"}
# fin JKHY/2008/page_30.pdf-2: an empty str_answer
JKHY = {"str_answer": "", "exe_answer": "yes"}
# fin KMI/2014/page_18.pdf-2: a str_answer without its leading zero
KMI = {"str_answer": ".33", "exe_answer": "0.32857"}


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        # " 57%": 57 * 0.01 = 0.57; |0.57 - 0.57484| / 0.57242 = 0.0085 < 0.01.
        (GS, "Let me compute. The answer is: 57%", 1.0),
        # 0.59 is 2.6% from 0.5748 and 3.4% from 0.57.
        (GS, "The answer is: 0.59", 0.0),
        # Not a number by its first word: the last number of the text, 0.575, is within 1%.
        (GS, "The answer is: about 0.575 of the total", 1.0),
        # ".57": the authors' pattern matches the bare decimal but reads it as 0.
        (GS, "The answer is: .57", 0.0),
        # No marker: the whole response; "57 percent" -> 57 (scale words ignored): 0.
        (GS, "57 percent", 0.0),
        # A missing response is an empty prediction: 0, counted.
        (GS, None, 0.0),
        # The gold "yes" normalises to "yes"; "Yes." loses its dot (rstrip) -> equal.
        (JKHY, "The answer is: Yes.", 1.0),
        # "$" normalises to nothing, which equals the empty str_answer.
        (JKHY, "The answer is: $", 1.0),
        # Gold ".33" reads as 0, but the executed 0.32857 matches 0.33 (0.43%).
        (KMI, "The answer is: 0.33", 1.0),
    ],
)
def test_fin_as_the_authors_score_it(
    gold: dict[str, str], answer: str | None, expected: float
) -> None:
    assert _value(FinQAExactMatch(), gold, answer) == expected


def test_fin_corrections_are_named_options() -> None:
    assert _value(FinQAExactMatch({"leading_decimal": True}), GS, "The answer is: .57") == 1.0
    assert _value(FinQAExactMatch({"drop_empty_gold": True}), JKHY, "The answer is: $") == 0.0
    assert to_number(".92", True) is None and to_number(".92", True, leading_decimal=True) == 0.92


# tat f1b63dd3002720ebbffa8f36d852d351: 92500, arithmetic, no scale
TAT = {"answer": 92500, "answer_type": "arithmetic", "scale": ""}
# a percent-scaled arithmetic answer (as tat's 'percent' scale writes them)
TAT_PERCENT = {"answer": 12.35, "answer_type": "arithmetic", "scale": "percent"}
# multi-span answers: the spans are sorted and joined
TAT_SPANS = {"answer": ["Europe", "Asia"], "answer_type": "multi-span", "scale": ""}
TAT_YEARS = {"answer": ["2019", "2018"], "answer_type": "multi-span", "scale": ""}


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        # " 92,500" -> 92500 -> "92500" (and "92500.0000"); gold "92500".
        (TAT, "The difference is 92,500. The answer is: 92,500", (1.0, 1.0)),
        # One trailing dot removed first.
        (TAT, "The answer is: 92500.", (1.0, 1.0)),
        # "$92.5 thousand" -> 92500.0 -> "92500.0000" -> token "92500.0" != "92500".
        (TAT, "The answer is: $92.5 thousand", (0.0, 0.0)),
        # Missing: the authors score " ", which normalises to nothing: F1 (P 1, R 0) = 0.
        (TAT, None, (0.0, 0.0)),
        # Gold 12.35 percent -> round(12.35, 2) * 0.01 -> "0.1235"; "12.35%" -> 0.1235.
        (TAT_PERCENT, "The answer is: 12.35%", (1.0, 1.0)),
        # A bare 0.1235 also matches through its 4-decimal form.
        (TAT_PERCENT, "The answer is: 0.1235", (1.0, 1.0)),
        # Gold "asia europe"; "Asia and Europe" -> {asia, and, europe}: P 2/3, R 1 -> 0.8.
        (TAT_SPANS, "The answer is: Asia Europe", (1.0, 1.0)),
        (TAT_SPANS, "The answer is: Asia and Europe", (0.0, 0.8)),
        # A prediction whose first word is a number is read as that one number: "2018";
        # against {2018, 2019}: P 1, R 1/2 -> 0.67.
        (TAT_YEARS, "The answer is: 2018 2019", (0.0, 0.67)),
    ],
)
def test_tat_as_the_authors_score_it(
    gold: dict[str, Any], answer: str | None, expected: tuple[float, float]
) -> None:
    assert (_value(TatQAExactMatch(), gold, answer), _value(TatQAF1(), gold, answer)) == expected


def test_tat_qa_table_answers_written_as_lists_are_read_as_the_bench_writes_them() -> None:
    # tat_qa.csv writes a count as ['6'] (the bench: 6): the gold is "6".
    count = {"answer": ["6"], "answer_type": "count", "scale": ""}
    assert _value(TatQAExactMatch(), count, "The answer is: 6") == 1.0
    assert _value(TatQAF1(), count, "The answer is: 6") == 1.0
    arithmetic = {"answer": ["12.35"], "answer_type": "arithmetic", "scale": "percent"}
    assert _value(TatQAExactMatch(), arithmetic, "The answer is: 12.35%") == 1.0


def test_tat_f1_is_rounded_as_numpy_rounds() -> None:
    assert round_half_even(2 / 3, 2) == 0.67 and round_half_even(0.125, 2) == 0.12


# paper_text 133eb4aa4394758be5f41744c60c99901b2bc01c: "Do they perform error analysis?"
PAPER_NO = {"references": ["No", "No"]}
# paper_tab e5c8e9e54e77960c8c26e8e238168a603fcdfcc6: a yes/no and a text reference
PAPER_MIXED = {
    "references": [
        "Yes",
        "From all reported results proposed method (NB+Lex) shows best accuracy on all 3 "
        "datasets - some models are not evaluated and not available in literature.",
    ]
}
MIXED_ANSWER = (
    "The answer is: Not on all datasets: proposed method shows best accuracy on all 3 datasets"
)


def test_paper_as_the_authors_score_it() -> None:
    # Split on "The answer is: " (with its space): "No, they do not." starts with "no" -> "No".
    assert _value(QasperAnswerF1(), PAPER_NO, "The answer is: No, they do not.") == 1.0
    # Starting with "no" is enough: "Not mentioned" becomes "No" as well.
    assert _value(QasperAnswerF1(), PAPER_NO, "The answer is: Not mentioned.") == 1.0
    # A newline after the colon: the whole response, which starts with "the": no alignment;
    # {answer, is, no, they, do, not} against {no}: P 1/6, R 1 -> 2/7.
    assert _value(QasperAnswerF1(), PAPER_NO, "The answer is:\nNo, they do not.") == (
        pytest.approx(2 / 7)
    )
    # Aligned against all references first: "Not ..." becomes "No", which shares no token
    # with either reference.
    assert _value(QasperAnswerF1(), PAPER_MIXED, MIXED_ANSWER) == 0.0
    # A missing answer: the authors' eval_main leaves the question out.
    missing = asyncio.run(
        QasperAnswerF1().evaluate(_case(PAPER_NO), QueryResponse(query="q", mode="llm"))
    )
    assert missing.value is None and missing.skipped_reason == LEFT_OUT_REASON


def test_paper_corrections_are_named_options() -> None:
    word = QasperAnswerF1(AnswerOptions(yes_no="word"))
    assert _value(word, PAPER_NO, "The answer is: No, they do not.") == 1.0
    assert _value(word, PAPER_NO, "The answer is: Not mentioned.") == 0.0
    # Unaligned against the text reference: 11 shared tokens of 13 and 24 -> 22/37.
    assert _value(word, PAPER_MIXED, MIXED_ANSWER) == pytest.approx(22 / 37)
    stripped = QasperAnswerF1({"extraction": "stripped"})
    assert _value(stripped, PAPER_NO, "The answer is:\nNo, they do not.") == 1.0


# feta 12844: "Which season of Smallville performed the best during it's airing?"
FETA = {
    "answer": "Over ten seasons the Smallville averaged, million viewers per episode, is with "
    "season two's highest rating of 6.3 million."
}
FETA_ANSWER = "The answer is:\nSmallville's season two, with a highest rating of 6.3 million."


def test_feta_as_the_authors_score_it() -> None:
    # No "The answer is: " (a newline follows the colon): the whole response, 11 tokens
    # (answer is smallvilles season two with highest rating of 63 million), 8 of them
    # among the reference's 18: F1 = 16 / 29.
    assert _value(FetaAnswerF1(), FETA, FETA_ANSWER) == pytest.approx(16 / 29)
    assert round(16 / 29, 4) == 0.5517
    # Stripped extraction: 9 tokens, 7 shared -> 14 / 27.
    stripped = FetaAnswerF1({"extraction": "stripped"})
    assert _value(stripped, FETA, FETA_ANSWER) == pytest.approx(14 / 27)


# nq -6718102858366318183: "what episode of black mirror was hannah john kamen in"
NQ = {
    "short_answer": "Episode `` Fifteen Million Merits ''",
    "long_answer": "Year Title Role Notes 2011 Misfits Carly Episode # 3.6 Black Mirror Selma "
    "Episode `` Fifteen Million Merits '' 2012 Whitechapel Roxy 2 episodes",
}


def test_nq_as_the_authors_score_it() -> None:
    # {fifteen, million, merits} in {episode, fifteen, million, merits}: P 1, R 3/4 -> 6/7.
    assert _value(NqAnswerF1(), NQ, "The answer is: Fifteen Million Merits") == (
        pytest.approx(6 / 7)
    )
    # Against the long answer (23 tokens): 4 of 4 -> 8/27 < 1 (short: 1.0).
    assert _value(NqAnswerF1(), NQ, "The answer is: Episode Fifteen Million Merits") == 1.0
    assert _value(NqAnswerF1(), NQ, None) is None


def test_a_recipe_without_answers_is_skipped_not_scored_zero() -> None:
    score = asyncio.run(
        FinQAExactMatch().evaluate(
            _case(GS),
            QueryResponse(query="q", mode="bm25", scope=KnowledgeBaseScope(answers=False)),
        )
    )
    assert score.value is None and score.skipped_reason == NO_ANSWERS_REASON
    # A recipe that answers but left this question unanswered: the authors' 0.
    assert _value(FinQAExactMatch(), GS, None, answers=True) == 0.0
    assert _value(FinQAExactMatch({"missing_answer": "skip"}), GS, None, answers=True) is None


def test_unknown_or_invalid_options_are_named() -> None:
    with pytest.raises(ValueError, match=r"unknown option.*'strip'"):
        AnswerOptions.of({"strip": True})
    with pytest.raises(ValueError, match=r"answer_options\.extraction must be one of"):
        AnswerOptions(extraction="lenient")  # type: ignore[arg-type]
    assert AnswerOptions(yes_no="word").deviations() == {"yes_no": "word"}
