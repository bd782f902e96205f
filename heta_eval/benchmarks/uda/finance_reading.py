"""Reading finance answers the way UDA's FinQA/TAT-QA scorers (`uda/eval`) read them.

A text is a number when its first word, stripped of `'"\\$€£¥%(),[]`, parses as a float.
Its value is the first number in the text (`(12)` is negative, `12%` is 0.12, a scale word
right after a number multiplies it unless scale is ignored), rounded to 4 decimals. The
authors' pattern finds a number written without its leading zero (`.92`) but reads it as
no number: `to_number` returns None for it unless `leading_decimal` asks for the corrected
reading (0.92). Answers are normalised token by token (lower-case, punctuation dropped
unless the token is a number, numbers written as their value, articles dropped). Written
from those definitions and checked against the authors' code side by side (see
docs/uda-scoring.md); pure functions, no I/O.
"""

from __future__ import annotations

import math
import re
import string

_NOT_IN_NUMBER = str.maketrans("", "", "'\"\\$€£¥%(),[]")
_NUMBER = re.compile(r"([+-]?\d+(\.\d+)?)|([+-]?\.\d+)")
_NEGATIVE = re.compile(r"\([\d.\s]+\)")
_PERCENT = re.compile(r"[\d.\s]+%")
_SCALED = re.compile(r"[\d.]+\s?[a-zA-Z]+")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def scale_factor(scale: str) -> int | float:
    """The multiplier a scale word stands for (`million` → 10**6, `percent` → 0.01, else 1)."""
    scale = scale.lower()
    for word, factor in (
        ("hundred", 100),
        ("thousand", 1_000),
        ("million", 1_000_000),
        ("billion", 1_000_000_000),
        ("percent", 0.01),
    ):
        if word in scale:
            return factor
    return 1


def is_number(text: str) -> bool:
    """Whether the first word of `text`, without currency, %, brackets and commas, is a number."""
    words = " ".join(w.translate(_NOT_IN_NUMBER) for w in text.split()).split()
    if not words:
        return False
    try:
        return not math.isnan(float(words[0]))
    except ValueError:
        return False


def first_number(text: str, leading_decimal: bool = False) -> int | float | None:
    """The first number of `text` without currency, % and brackets: an int unless it has a
    decimal point. One written without its leading zero (`.92`) is None, as the authors'
    code reads it, unless `leading_decimal`."""
    found = _NUMBER.search(text.translate(_NOT_IN_NUMBER))
    if found is None:
        return None
    digits = found.group(1) or (found.group(3) if leading_decimal else None)
    if not digits:
        return None
    return float(digits) if "." in digits else int(digits)


def to_number(text: str, ignore_scale: bool, leading_decimal: bool = False) -> int | float | None:
    """The first number of `text`, negative when bracketed, a fraction when followed by %,
    times the first scale word after a number unless `ignore_scale`, rounded to 4 decimals;
    None when there is none (see `first_number`)."""
    number = first_number(text, leading_decimal)
    if number is None:
        return None
    scaled = _SCALED.search(text)
    scale = scale_factor(scaled.group()) if scaled else 1
    negative = -1 if _NEGATIVE.search(text.strip()) else 1
    percent = 0.01 if _PERCENT.search(text.strip()) else 1
    # The authors' order of multiplication, so that the float rounding is theirs too.
    if ignore_scale:
        return round(number * negative * percent, 4)
    return round(number * scale * negative * percent, 4)


def normalize_finance_answer(text: str, ignore_scale: bool, leading_decimal: bool = False) -> str:
    """Token by token (split on single spaces): lower-case, drop punctuation unless the
    token is a number, write a number as its value (`None` when it has none, as the
    authors do), drop articles; tokens left blank disappear."""
    parts = []
    for token in text.split(" "):
        token = token.lower()
        if not is_number(token):
            token = "".join(ch for ch in token if ch not in _PUNCTUATION)
        if is_number(token):
            token = str(to_number(token, ignore_scale, leading_decimal))
        token = " ".join(_ARTICLES.sub(" ", token).split())
        if token.strip():
            parts.append(token)
    return " ".join(parts).strip()


def answer_bag(
    text: str, ignore_scale: bool, leading_decimal: bool = False
) -> tuple[str, frozenset[str]]:
    """The normalised answer, each number token's text then replaced (everywhere in the
    answer, as the authors' `str.replace` does) by its value, and its token set."""
    span = normalize_finance_answer(text, ignore_scale, leading_decimal)
    for token in span.split():
        if is_number(token):
            span = span.replace(token, str(to_number(token, ignore_scale, leading_decimal)))
    return span, frozenset(span.split())


def bag_f1(predicted: frozenset[str], gold: frozenset[str]) -> float:
    """DROP's F1 of two token sets (an empty set has precision/recall 1)."""
    common = len(predicted & gold)
    precision = common / len(predicted) if predicted else 1.0
    recall = common / len(gold) if gold else 1.0
    if precision == 0.0 and recall == 0.0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def round_half_even(value: float, decimals: int) -> float:
    """NumPy's `round(x, d)`: x * 10**d rounded half to even, divided back (the authors
    round TAT-QA's F1 with it; Python's `round` differs on a few binary fractions)."""
    factor = 10**decimals
    return round(value * factor) / factor
