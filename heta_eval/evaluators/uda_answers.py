"""UDA's answer metrics, one per subset, as the benchmark's authors score generated answers.

- fin: FinQA exact match — the answer's number within 1% (relative to the mean of the two)
  of the executed answer or of the written one (`57%` is 0.57); text answers (yes/no) must
  normalise to the same words. Scale words are ignored.
- tat: TAT-QA exact match and numeracy-focused F1 — the gold answer is written with its
  scale (`92,500` thousand → `92500000`; a percent answer as a fraction with 4 decimals),
  the prediction as written and, for a bare number, also with 4 decimals; EM compares the
  normalised answers, F1 their token sets (DROP F1, rounded to 2 decimals); the better
  (EM, then F1) of the prediction's forms counts.
- paper: Qasper answer F1 — SQuAD token F1, the best over the reference answers; a yes/no
  reference turns a prediction starting with yes/no into that word.
- feta: SQuAD token F1 against the one reference answer.
- nq: the better SQuAD token F1 against the long and the short answer.

The prediction is the text after the last `The answer is:` (UDA's prompts), else the whole
answer. Cases without a generated answer are skipped, not scored 0. Gold answers are read
from `expected.metadata["uda_answer"]` (fin, tat, nq) or `expected.answers` (paper, feta).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from heta_eval.evaluators.answer import normalize_answer
from heta_eval.evaluators.finance_answers import (
    answer_bag,
    bag_f1,
    final_answer,
    is_number,
    normalize_finance_answer,
    scale_factor,
    to_number,
)
from heta_eval.protocol import Evaluator
from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse

ANSWER_KEY = "uda_answer"
_ANY_NUMBER = re.compile(r"[-+]?\d*\.?\d+")


def squad_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1 of the normalised texts; 0 when they share no token (or one is empty)."""
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(reference).split()
    overlap = sum((Counter(predicted) & Counter(expected)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


def qasper_f1(prediction: str, references: list[str]) -> float:
    """Best SQuAD F1 over the references, yes/no predictions aligned to yes/no references."""
    best = 0.0
    for reference in references:
        if reference.lower() in ("yes", "no"):
            if prediction.lower().startswith("yes"):
                prediction = "Yes"
            elif prediction.lower().startswith("no"):
                prediction = "No"
        best = max(best, squad_f1(prediction, reference))
    return best


def _finqa_value(text: str) -> int | float | str:
    if is_number(text):
        value = to_number(text, ignore_scale=True)
        return 0 if value is None else value
    return normalize_finance_answer(text, ignore_scale=True)


def _finqa_match(predicted: int | float | str, gold: int | float | str) -> bool:
    if isinstance(gold, str):
        return answer_bag(str(predicted), True)[0] == answer_bag(gold, True)[0]
    if isinstance(predicted, str):
        try:
            predicted = float(predicted)
        except ValueError:
            found = _ANY_NUMBER.findall(predicted)
            if not found:
                return False
            predicted = float(found[-1])
    return abs(predicted - gold) / abs((predicted + gold) / 2 + 1e-9) < 0.01


def finqa_exact_match(response: str, gold_answers: list[str]) -> float:
    """1.0 when the final answer matches any gold form (executed value, written answer)."""
    prediction = final_answer(response).rstrip("\"'.\n,")
    if not prediction:
        return 0.0
    predicted = _finqa_value(prediction)
    return float(any(_finqa_match(predicted, _finqa_value(g)) for g in gold_answers))


def tatqa_gold(answer: Any, answer_type: str) -> list[str]:
    """The gold spans of a TAT-QA answer: a list for (multi-)spans, else one string."""
    items = [str(a) for a in answer] if isinstance(answer, list | tuple) else [str(answer)]
    if answer_type == "count" and len(items) == 1 and is_number(items[0]):
        value = to_number(items[0], ignore_scale=True)
        items = [str(int(value))] if value is not None else items
    return items


def tatqa_string(answers: list[str], scale: str) -> str:
    """Spans (sorted) written with the scale: numbers as their scaled value, text + scale."""
    written = []
    for answer in sorted(answers):
        value = to_number(answer, ignore_scale=False) if is_number(answer) else None
        if value is None:
            written.append(f"{answer} {scale}" if scale else answer)
        elif "%" in answer:
            written.append(f"{value:.4f}")
        elif isinstance(value, int):
            written.append(str(value * scale_factor(scale)))
        else:
            written.append(f"{round(value, 2) * scale_factor(scale):.4f}")
    return " ".join(written)


def tatqa_em_f1(response: str, gold: list[str], scale: str) -> tuple[float, float]:
    """TAT-QA (EM, F1) of a response against gold spans and their scale."""
    prediction = final_answer(response)
    if prediction.endswith("."):
        prediction = prediction[:-1]
    if not prediction or not gold:
        return 0.0, 0.0
    forms = [tatqa_string([prediction], "")]
    if "%" not in prediction and is_number(prediction):
        value = to_number(prediction, ignore_scale=False)
        if value is not None:
            forms.append(f"{value:.4f}")
    gold_text, gold_bag = answer_bag(tatqa_string(gold, scale), False)
    best = (0.0, 0.0)
    for form in forms:
        text, bag = answer_bag(form, False)
        best = max(best, (float(text == gold_text), round(bag_f1(bag, gold_bag), 2)))
    return best


def _skip(name: str, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore | None:
    if response.answer is None:
        return EvaluationScore(name=name, value=None, skipped_reason="no answer generated")
    if not case.expected.answers:
        return EvaluationScore(name=name, value=None, skipped_reason="no expected answers")
    return None


def _gold(case: BenchmarkCase) -> Mapping[str, Any]:
    return case.expected.metadata.get(ANSWER_KEY) or {}


class FinQAExactMatch(Evaluator):
    """UDA fin: FinQA exact match of the executed numeric answer (see module docstring)."""

    name = "finqa_exact_match"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        if (skipped := _skip(self.name, case, response)) is not None:
            return skipped
        gold = _gold(case)
        forms = [str(gold["exe_answer"]), str(gold["str_answer"])] if gold else []
        forms = [f for f in forms if f.strip()] or list(case.expected.answers)
        value = finqa_exact_match(response.answer or "", forms)
        return EvaluationScore(name=self.name, value=value)


class _TatQA(Evaluator):
    index = 0

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        if (skipped := _skip(self.name, case, response)) is not None:
            return skipped
        gold = _gold(case)
        spans = tatqa_gold(
            gold.get("answer", list(case.expected.answers)), gold.get("answer_type", "")
        )
        scores = tatqa_em_f1(response.answer or "", spans, gold.get("scale", ""))
        return EvaluationScore(name=self.name, value=scores[self.index])


class TatQAExactMatch(_TatQA):
    """UDA tat: TAT-QA exact match with the answer's scale."""

    name = "tatqa_exact_match"
    index = 0


class TatQAF1(_TatQA):
    """UDA tat: TAT-QA numeracy-focused F1 with the answer's scale."""

    name = "tatqa_f1"
    index = 1


class QasperAnswerF1(Evaluator):
    """UDA paper_text/paper_tab: Qasper answer F1, the best over the reference answers."""

    name = "qasper_answer_f1"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        if (skipped := _skip(self.name, case, response)) is not None:
            return skipped
        value = qasper_f1(final_answer(response.answer or ""), list(case.expected.answers))
        return EvaluationScore(name=self.name, value=value)


class FetaAnswerF1(Evaluator):
    """UDA feta: SQuAD token F1 against the reference answer."""

    name = "feta_answer_f1"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        if (skipped := _skip(self.name, case, response)) is not None:
            return skipped
        prediction = final_answer(response.answer or "")
        value = max(squad_f1(prediction, a) for a in case.expected.answers)
        return EvaluationScore(name=self.name, value=value)


class NqAnswerF1(Evaluator):
    """UDA nq: the better SQuAD token F1 against the long and the short answer."""

    name = "nq_answer_f1"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        if (skipped := _skip(self.name, case, response)) is not None:
            return skipped
        gold = _gold(case)
        references = [gold.get("long_answer") or "", gold.get("short_answer") or ""]
        if not any(references):
            references = list(case.expected.answers)
        prediction = final_answer(response.answer or "")
        value = max(squad_f1(prediction, r) for r in references)
        return EvaluationScore(name=self.name, value=value)
