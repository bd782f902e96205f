"""UDA fin and tat answers, scored as the authors' `uda/eval` FinQA and TAT-QA code scores them.

- fin (FinQA exact match): the prediction is the text after the last `The answer is:`
  (without the space) with trailing quotes, dots, commas and newlines removed; an empty
  prediction scores 0. The gold answers are `str(exe_answer)` and `str_answer`, an empty
  `str_answer` included. Each side is read as a number when its first word is one (scale
  words ignored; a number the authors cannot read counts as 0) or else as normalised text.
  A numeric gold answer matches a number within 1% of it (relative to their mean); a text
  prediction is read then as its float, else its last number. A text gold answer matches
  an equal normalised text. The best over the gold answers counts.
- tat (TAT-QA exact match and F1): the prediction is the text after the last
  `The answer is:`, one trailing dot removed. The gold spans (sorted) are written with
  their scale (`92,500` thousand → `92500000`, a percent as a fraction with 4 decimals,
  a span with its scale word); the prediction as written and, for a bare number, also with
  4 decimals. EM compares the normalised texts, F1 their token sets (rounded to 2
  decimals); the better (EM, then F1) of the prediction's forms counts.

`leading_decimal` reads `.92` as 0.92 and `drop_empty_gold` ignores an empty `str_answer`:
corrections, not the authors' scoring (see docs/uda-scoring.md).
"""

from __future__ import annotations

import re
from typing import Any

from heta_eval.benchmarks.uda.finance_reading import (
    answer_bag,
    bag_f1,
    is_number,
    normalize_finance_answer,
    round_half_even,
    scale_factor,
    to_number,
)

FINANCE_MARKER = "The answer is:"
_ANY_NUMBER = re.compile(r"[-+]?\d*\.?\d+")
Value = int | float | str


def _finqa_value(text: str, leading_decimal: bool) -> Value:
    """A FinQA answer as the authors' `get_answer` reads it (scale words ignored)."""
    if is_number(text):
        value = to_number(text, True, leading_decimal)
        if value is None:
            return 0  # the authors' reading of a number they cannot parse (`.92`)
        if "%" in text or isinstance(value, int):
            return value
        return round(value, 4)
    return normalize_finance_answer(text, True, leading_decimal)


def _finqa_match(predicted: Value, gold: Value, leading_decimal: bool) -> float:
    if isinstance(gold, str):
        same = (
            answer_bag(str(predicted), True, leading_decimal)[0]
            == answer_bag(gold, True, leading_decimal)[0]
        )
        return float(same)
    if isinstance(predicted, str):
        try:
            predicted = float(predicted)
        except ValueError:
            found = _ANY_NUMBER.findall(predicted)
            if not found:
                return 0.0
            predicted = float(found[-1])
    return float(abs(predicted - gold) / abs((predicted + gold) / 2 + 1e-9) < 0.01)


def finqa_exact_match(
    response: str | None,
    exe_answer: str,
    str_answer: str,
    *,
    leading_decimal: bool = False,
    drop_empty_gold: bool = False,
) -> float:
    """FinQA exact match of a whole response (None: a missing response, scored 0)."""
    prediction = (response or "").split(FINANCE_MARKER)[-1].rstrip("\"'.\n,")
    if not prediction:
        return 0.0
    gold = [exe_answer, str_answer]
    if drop_empty_gold:
        gold = [g for g in gold if g.strip()]
    predicted = _finqa_value(prediction, leading_decimal)
    scores = [
        _finqa_match(predicted, _finqa_value(g, leading_decimal), leading_decimal)
        for g in sorted(gold)
    ]
    return max(scores, default=0.0)


def tatqa_gold(answer: Any, answer_type: str) -> list[str]:
    """The gold spans of a TAT-QA answer: the list for (multi-)spans, else one string."""
    if answer_type in ("span", "multi-span"):
        if not isinstance(answer, list):
            raise ValueError(f"a TAT-QA {answer_type} answer must be a list, got {answer!r}")
        return [str(a) for a in answer]
    if answer_type == "count":
        return [str(int(answer))]
    return [str(answer)]


def tatqa_string(answers: list[str], scale: str, leading_decimal: bool = False) -> str:
    """Spans (sorted) written with the scale: numbers as their scaled value, text + scale."""
    written = []
    for answer in sorted(answers):
        value = to_number(answer, False, leading_decimal) if is_number(answer) else None
        if value is None:
            written.append(f"{answer} {scale}" if scale else answer)
        elif "%" in answer:
            written.append(f"{value:.4f}")
        elif isinstance(value, int):
            written.append(str(value * scale_factor(scale)))
        else:
            written.append(f"{round(value, 2) * scale_factor(scale):.4f}")
    return " ".join(written)


def tatqa_em_f1(
    response: str | None,
    gold: list[str],
    scale: str,
    *,
    leading_decimal: bool = False,
) -> tuple[float, float]:
    """TAT-QA (EM, F1) of a whole response against gold spans and their scale.

    A missing response (None) is scored as the authors score it: as the text `" "`."""
    prediction = " " if response is None else response.split(FINANCE_MARKER)[-1]
    if prediction.endswith("."):
        prediction = prediction[:-1]
    if not prediction or not gold:
        return 0.0, 0.0
    forms = [tatqa_string([prediction], "", leading_decimal)]
    if "%" not in prediction and is_number(prediction):
        value = to_number(prediction, False, leading_decimal)
        if value is not None:
            forms.append(f"{value:.4f}")
    gold_text, gold_bag = answer_bag(
        tatqa_string(gold, scale, leading_decimal), False, leading_decimal
    )
    best = (0.0, 0.0)
    for form in forms:
        text, bag = answer_bag(form, False, leading_decimal)
        best = max(best, (float(text == gold_text), round_half_even(bag_f1(bag, gold_bag), 2)))
    return best
