"""Answer metrics: SQuAD normalisation and exact match, containment in the answer or the
context, numeric match with its tolerance, and token F1."""

from __future__ import annotations

import pytest

from heta_eval.evaluators import (
    AnswerContains,
    AnswerExactMatch,
    AnswerNumericMatch,
    AnswerTokenF1,
    normalize_answer,
    token_f1,
)
from tests.unit.evaluators.scoring import make_case, make_response, make_result, score_of


def test_squad_normalisation_and_exact_match() -> None:
    assert normalize_answer("The  Answer, is: 42!") == "answer is 42"
    case = make_case(answers=("Marine protected areas",))
    assert (
        score_of(AnswerExactMatch(), case, make_response(answer="marine protected areas.")) == 1.0
    )
    assert score_of(AnswerExactMatch(), case, make_response(answer="protected areas")) == 0.0
    assert score_of(AnswerExactMatch(), case, make_response()) is None


def test_answer_contains_on_answer_and_on_context() -> None:
    case = make_case(answers=("four",))
    assert score_of(AnswerContains(), case, make_response(answer="He found four moons.")) == 1.0
    assert score_of(AnswerContains(), case, make_response(answer="fourteen")) == 0.0
    context = AnswerContains(target="context", k=2)
    assert context.name == "context_has_answer@2"
    hit = make_response(
        make_result("a", text="none"), make_result("b", text="Galileo saw four moons")
    )
    assert score_of(context, case, hit) == 1.0
    late = make_response(make_result("a"), make_result("b"), make_result("c", text="four"))
    assert score_of(context, case, late) == 0.0


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
    assert score_of(evaluator, make_case(answers=expected), make_response(answer=answer)) == hit


def test_numeric_tolerance_is_configurable() -> None:
    case = make_case(answers=("100.0",))
    assert score_of(AnswerNumericMatch(rel_tol=0.05), case, make_response(answer="104.0")) == 1.0
    assert score_of(AnswerNumericMatch(rel_tol=0.01), case, make_response(answer="104.0")) == 0.0
    assert score_of(AnswerNumericMatch(), case, make_response()) is None


def test_token_f1() -> None:
    assert token_f1("the marine protected areas", "Marine protected areas") == 1.0
    assert token_f1("protected areas", "marine protected areas") == pytest.approx(0.8)
    assert token_f1("", "x") == 0.0
    case = make_case(answers=("four moons", "4"))
    assert score_of(AnswerTokenF1(), case, make_response(answer="four")) == pytest.approx(2 / 3)
