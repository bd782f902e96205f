"""Answer metrics: does the generated answer (or the retrieved context) hold the answer?"""

from __future__ import annotations

import re
import string
from typing import Literal

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


class AnswerExactMatch:
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


class AnswerContains:
    """1.0 when an expected answer occurs (normalised) in the answer or the retrieved context.

    With `target="answer"` the generated answer is searched; with `target="context"` the
    text of the top-`k` results is (answer recall of the context, as in FlashRAG/BERGEN),
    which needs no answer generation.
    """

    def __init__(self, target: Literal["answer", "context"] = "answer", k: int = 10) -> None:
        if target not in ("answer", "context"):
            raise ValueError(f"target must be 'answer' or 'context', got {target!r}")
        if k <= 0:
            raise ValueError(f"k must be a positive integer, got {k}")
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
