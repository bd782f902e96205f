"""Answer metrics: does the generated answer (or the retrieved context) hold the answer?"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Literal

from heta_eval.config.ranges import TOP_K_RANGE, Range
from heta_eval.evaluators.numbers import numbers_match, parse_number, parse_numbers
from heta_eval.protocols import Evaluator
from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower-case, drop punctuation and articles, collapse whitespace."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _skip(name: str, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore | None:
    if not case.expected.answers:
        return EvaluationScore(name=name, value=None, skipped_reason="no expected answers")
    if response.answer is None:
        return EvaluationScore(name=name, value=None, skipped_reason="no answer generated")
    return None


class AnswerExactMatch(Evaluator):
    """1.0 when the answer equals any expected answer after SQuAD normalisation."""

    name = "answer_exact_match"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        skipped = _skip(self.name, case, response)
        if skipped is not None:
            return skipped
        assert response.answer is not None
        answer = normalize_answer(response.answer)
        hit = any(answer == normalize_answer(a) for a in case.expected.answers)
        return EvaluationScore(name=self.name, value=float(hit))


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1 between normalised prediction and reference (bag of tokens)."""
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(reference).split()
    if not predicted or not expected:
        return float(predicted == expected)
    common = Counter(predicted) & Counter(expected)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


class AnswerTokenF1(Evaluator):
    """SQuAD token F1 of the answer, the best over the expected answers."""

    name = "answer_f1"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        skipped = _skip(self.name, case, response)
        if skipped is not None:
            return skipped
        best = max(token_f1(response.answer or "", a) for a in case.expected.answers)
        return EvaluationScore(name=self.name, value=best)


class AnswerContains(Evaluator):
    """1.0 when an expected answer occurs (normalised) in the answer or the retrieved context.

    With `target="answer"` the generated answer is searched; with `target="context"` the
    text of the top-`k` results is (answer recall of the context, as in FlashRAG/BERGEN),
    which needs no answer generation.
    """

    def __init__(self, target: Literal["answer", "context"] = "answer", k: int = 10) -> None:
        if target not in ("answer", "context"):
            raise ValueError(f"target must be 'answer' or 'context', got {target!r}")
        TOP_K_RANGE.check("k", k)
        self.target = target
        self.k = k

    @property
    def name(self) -> str:
        return "answer_contains" if self.target == "answer" else f"context_has_answer@{self.k}"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        if self.target == "answer":
            skipped = _skip(self.name, case, response)
            if skipped is not None:
                return skipped
            haystack = normalize_answer(response.answer or "")
        else:
            if not case.expected.answers:
                return EvaluationScore(
                    name=self.name, value=None, skipped_reason="no expected answers"
                )
            haystack = normalize_answer(" ".join(r.text for r in response.results[: self.k]))
        padded = f" {haystack} "
        hit = any(f" {normalize_answer(a)} " in padded for a in case.expected.answers)
        return EvaluationScore(name=self.name, value=float(hit))


class AnswerNumericMatch(Evaluator):
    """Answer correctness that understands numbers (FinQA/TAT-QA style answers).

    Every expected answer form counts (`57%`, `0.57484`); a number in the generated answer
    matches when it is within `rel_tol` (relative) or `abs_tol` (absolute) of one, percent
    forms included, or equals it rounded to the precision the expected answer shows. Signs,
    thousands separators, currency symbols and accounting parentheses are understood. When
    the answer holds several numbers, any of them may match (`details.numbers` lists them).
    Expected answers without a number (yes/no) fall back to normalised exact match.
    """

    name = "answer_numeric_match"

    def __init__(self, rel_tol: float = 1e-2, abs_tol: float = 1e-9) -> None:
        Range(0, 1).check("rel_tol", rel_tol)
        Range(0).check("abs_tol", abs_tol)
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        skipped = _skip(self.name, case, response)
        if skipped is not None:
            return skipped
        answer = response.answer or ""
        expected = [n for a in case.expected.answers if (n := parse_number(a)) is not None]
        if not expected:
            hit = any(
                normalize_answer(answer) == normalize_answer(a) for a in case.expected.answers
            )
            return EvaluationScore(name=self.name, value=float(hit), details={"mode": "text"})
        predicted = parse_numbers(answer)
        hit = any(
            numbers_match(p, e, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
            for p in predicted
            for e in expected
        )
        return EvaluationScore(
            name=self.name,
            value=float(hit),
            details={"mode": "numeric", "numbers": [p.value for p in predicted]},
        )
