"""AnswerReciprocalRank: a complete evaluator (BenchmarkEvaluatorProtocol, through the
`Evaluator` base class that gives `aclose` its default)."""

from __future__ import annotations

from heta_eval.evaluators import normalize_answer
from heta_eval.protocols import Evaluator
from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse


class AnswerReciprocalRank(Evaluator):
    """1 / rank of the first top-`k` result whose text contains an expected answer, else 0.

    Texts and answers are compared after SQuAD normalisation (lower case, no punctuation or
    articles), as `context_has_answer@k` does; this metric also rewards ranking that result
    first. A case without expected answers is skipped (value None with a reason), so it is
    counted apart and never averaged in.
    """

    def __init__(self, k: int = 10) -> None:
        if k <= 0:
            raise ValueError(f"k must be a positive integer, got {k}")
        self.k = k

    @property
    def name(self) -> str:
        """The metric's name in reports and MLflow (`@` is logged as `_at_`)."""
        return f"answer_mrr@{self.k}"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        """Score one case's response; pure computation, no I/O."""
        answers = [f" {normalize_answer(a)} " for a in case.expected.answers]
        if not answers:
            return EvaluationScore(name=self.name, value=None, skipped_reason="no expected answers")
        for rank, result in enumerate(response.results[: self.k], start=1):
            text = f" {normalize_answer(result.text)} "
            if any(answer in text for answer in answers):
                return EvaluationScore(name=self.name, value=1.0 / rank, details={"rank": rank})
        return EvaluationScore(name=self.name, value=0.0)
