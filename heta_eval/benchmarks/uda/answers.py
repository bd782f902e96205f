"""UDA's answer metrics, one per subset, computed as the authors' `uda/eval` code computes them.

By default every step is the authors' (checked side by side with their code at fca5237 on
the same inputs; docs/uda-scoring.md lists the check and each difference):

- extraction: paper, feta and nq keep the text after the last `"The answer is: "` (with
  its space: a newline after the colon leaves the whole response); fin and tat split on
  `"The answer is:"` (see `heta_eval.benchmarks.uda.finance`).
- paper (`qasper_answer_f1`): when any reference is yes/no, a prediction starting with
  "yes"/"no" becomes that word first; then SQuAD token F1, the best over the first three
  references.
- feta (`feta_answer_f1`): SQuAD token F1 against the one reference.
- nq (`nq_answer_f1`): the better SQuAD token F1 against the long and the short answer.
- fin (`finqa_exact_match`), tat (`tatqa_exact_match`, `tatqa_f1`): see `finance`.
- a missing answer: fin scores 0, tat scores the text `" "`, paper/feta/nq leave the
  question out (the authors' `eval_main` drops it), as their code counts a `None`
  response; a recipe that generates no answers at all is skipped.

`AnswerOptions` names the corrections a user may choose instead; none is the default.
Gold answers are read from `expected.metadata["uda_answer"]`, as the bench file writes
them (`expected.answers` when it is absent).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from heta_eval.benchmarks.uda.finance import finqa_exact_match, tatqa_em_f1, tatqa_gold
from heta_eval.evaluators.answer import normalize_answer
from heta_eval.protocols import Evaluator
from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse

ANSWER_KEY = "uda_answer"
TEXT_MARKER = "The answer is: "
NO_ANSWERS_REASON = "the recipe generates no answers"
LEFT_OUT_REASON = "no answer: the authors' scorer leaves the question out"


@dataclass(frozen=True)
class AnswerOptions:
    """Corrections of the authors' answer scoring; the defaults are the authors' scoring.

    - `extraction`: `authors` (as above) or `stripped`: every subset keeps the text after
      the last `The answer is:` stripped of surrounding whitespace.
    - `yes_no`: `authors` (a prediction *starting* with yes/no becomes that word, once,
      for all references) or `word`: only a first *word* yes/no is aligned, and only when
      scored against a yes/no reference.
    - `leading_decimal`: read `.92` as 0.92 (the authors read it as 0) in fin and tat.
    - `drop_empty_gold`: fin ignores an empty `str_answer` (the authors keep it as a
      gold answer, which a prediction that normalises to nothing matches).
    - `missing_answer`: `authors` (as above) or `skip`: a missing answer is never scored.
    """

    extraction: Literal["authors", "stripped"] = "authors"
    yes_no: Literal["authors", "word"] = "authors"
    leading_decimal: bool = False
    drop_empty_gold: bool = False
    missing_answer: Literal["authors", "skip"] = "authors"

    def __post_init__(self) -> None:
        for name, allowed in (
            ("extraction", ("authors", "stripped")),
            ("yes_no", ("authors", "word")),
            ("missing_answer", ("authors", "skip")),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"answer_options.{name} must be one of {list(allowed)}, "
                    f"got {getattr(self, name)!r}"
                )

    @classmethod
    def of(cls, value: AnswerOptions | Mapping[str, Any] | None) -> AnswerOptions:
        """Options from a mapping (a config's `answer_options`), naming unknown keys."""
        if value is None or isinstance(value, AnswerOptions):
            return value or cls()
        unknown = sorted(set(value) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(
                f"answer_options: unknown option(s) {unknown}; "
                f"known: {sorted(cls.__dataclass_fields__)}"
            )
        return cls(**dict(value))

    def deviations(self) -> dict[str, Any]:
        """The options that differ from the authors' scoring."""
        default = AnswerOptions()
        return {
            name: getattr(self, name)
            for name in self.__dataclass_fields__
            if getattr(self, name) != getattr(default, name)
        }


AUTHORS = AnswerOptions()


def text_prediction(response: str, options: AnswerOptions = AUTHORS) -> str:
    """The prediction of a paper, feta or nq response (see the module docstring)."""
    if options.extraction == "stripped":
        return response.split(TEXT_MARKER.rstrip())[-1].strip()
    return response.split(TEXT_MARKER)[-1]


def finance_response(response: str | None, options: AnswerOptions = AUTHORS) -> str | None:
    """A fin/tat response as its scorer reads it (just its prediction, stripped, under
    `extraction: stripped`; the scorer's own split then leaves it as it is)."""
    if response is None or options.extraction == "authors":
        return response
    return response.split(TEXT_MARKER.rstrip())[-1].strip()


def squad_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1 of the normalised texts; 0 when they share no token (or one is empty)."""
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(reference).split()
    overlap = sum((Counter(predicted) & Counter(expected)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


def _aligned(prediction: str, word: bool) -> str:
    lowered = prediction.lower()
    if word:
        first = normalize_answer(lowered).split()[:1]
        return {"yes": "Yes", "no": "No"}.get(first[0], prediction) if first else prediction
    if lowered.startswith("yes"):
        return "Yes"
    if lowered.startswith("no"):
        return "No"
    return prediction


def qasper_f1(prediction: str, references: list[str], options: AnswerOptions = AUTHORS) -> float:
    """Qasper answer F1 of a prediction (see the module docstring)."""
    if options.yes_no == "word":
        return max(
            (
                squad_f1(
                    _aligned(prediction, True) if r.lower() in ("yes", "no") else prediction, r
                )
                for r in references
            ),
            default=0.0,
        )
    if any(r.lower() in ("yes", "no") for r in references):
        prediction = _aligned(prediction, False)
    # The authors pad the references to three and score the first three.
    return max(squad_f1(prediction, r) for r in [*references, " ", " ", " "][:3])


def _gold(case: BenchmarkCase) -> Mapping[str, Any]:
    return case.expected.metadata.get(ANSWER_KEY) or {}


class _UdaAnswerMetric(Evaluator):
    """Shared: options, the missing-answer rule, the name."""

    name = ""
    # Whether the authors score a missing response (fin, tat) or leave it out (paper...).
    scores_missing = False

    def __init__(self, options: AnswerOptions | Mapping[str, Any] | None = None) -> None:
        self.options = AnswerOptions.of(options)

    def _missing(self, response: QueryResponse) -> EvaluationScore | None:
        if response.answer is not None:
            return None
        if response.scope is not None and response.scope.answers is False:
            return EvaluationScore(name=self.name, value=None, skipped_reason=NO_ANSWERS_REASON)
        if self.options.missing_answer == "skip":
            return EvaluationScore(name=self.name, value=None, skipped_reason="no answer generated")
        if not self.scores_missing:
            return EvaluationScore(name=self.name, value=None, skipped_reason=LEFT_OUT_REASON)
        return None

    def _scored(self, value: float, response: QueryResponse) -> EvaluationScore:
        details = {"missing_answer": True} if response.answer is None else {}
        return EvaluationScore(name=self.name, value=value, details=details)


class FinQAExactMatch(_UdaAnswerMetric):
    """UDA fin: FinQA exact match of the executed numeric answer (see `finance`)."""

    name = "finqa_exact_match"
    scores_missing = True

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        if (missing := self._missing(response)) is not None:
            return missing
        gold = _gold(case)
        if gold:
            exe, text = str(gold.get("exe_answer", "")), str(gold.get("str_answer", ""))
        elif case.expected.answers:
            exe, text = case.expected.answers[0], case.expected.answers[-1]
        else:
            return EvaluationScore(name=self.name, value=None, skipped_reason="no expected answers")
        value = finqa_exact_match(
            finance_response(response.answer, self.options),
            exe,
            text,
            leading_decimal=self.options.leading_decimal,
            drop_empty_gold=self.options.drop_empty_gold,
        )
        return self._scored(value, response)


class _TatQA(_UdaAnswerMetric):
    index = 0
    scores_missing = True

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        if (missing := self._missing(response)) is not None:
            return missing
        gold = _gold(case)
        answer_type = str(gold.get("answer_type", ""))
        answer = gold.get("answer", list(case.expected.answers))
        if answer_type in ("span", "multi-span") and not isinstance(answer, list):
            answer = [answer]  # a QA-table row's single span
        elif answer_type not in ("span", "multi-span") and isinstance(answer, list):
            # The QA table writes every answer as a list (`['6']`); the bench, a number.
            answer = answer[0] if len(answer) == 1 else answer
        spans = tatqa_gold(answer, answer_type)
        scores = tatqa_em_f1(
            finance_response(response.answer, self.options),
            spans,
            str(gold.get("scale", "")),
            leading_decimal=self.options.leading_decimal,
        )
        return self._scored(scores[self.index], response)


class TatQAExactMatch(_TatQA):
    """UDA tat: TAT-QA exact match with the answer's scale."""

    name = "tatqa_exact_match"
    index = 0


class TatQAF1(_TatQA):
    """UDA tat: TAT-QA numeracy-focused F1 with the answer's scale."""

    name = "tatqa_f1"
    index = 1


class QasperAnswerF1(_UdaAnswerMetric):
    """UDA paper_text/paper_tab: Qasper answer F1 (see the module docstring)."""

    name = "qasper_answer_f1"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        references = [str(r) for r in _gold(case).get("references") or case.expected.answers]
        if not references:
            return EvaluationScore(name=self.name, value=None, skipped_reason="no expected answers")
        if (missing := self._missing(response)) is not None:
            return missing
        prediction = text_prediction(response.answer or "", self.options)
        return self._scored(qasper_f1(prediction, references, self.options), response)


class FetaAnswerF1(_UdaAnswerMetric):
    """UDA feta: SQuAD token F1 against the reference answer."""

    name = "feta_answer_f1"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        gold = _gold(case)
        reference = str(gold["answer"]) if "answer" in gold else " ".join(case.expected.answers[:1])
        if not reference:
            return EvaluationScore(name=self.name, value=None, skipped_reason="no expected answers")
        if (missing := self._missing(response)) is not None:
            return missing
        prediction = text_prediction(response.answer or "", self.options)
        return self._scored(squad_f1(prediction, reference), response)


class NqAnswerF1(_UdaAnswerMetric):
    """UDA nq: the better SQuAD token F1 against the long and the short answer."""

    name = "nq_answer_f1"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        gold = _gold(case)
        references = [str(gold.get("long_answer") or ""), str(gold.get("short_answer") or "")]
        if not gold:
            references = list(case.expected.answers)
        if not references:
            return EvaluationScore(name=self.name, value=None, skipped_reason="no expected answers")
        if (missing := self._missing(response)) is not None:
            return missing
        prediction = text_prediction(response.answer or "", self.options)
        return self._scored(max(squad_f1(prediction, r) for r in references), response)
