"""Reading finance answers the way FinQA/TAT-QA's evaluation scripts read them.

UDA scores its finance subsets with these scripts' conventions: a token is a number when
its first word, stripped of `'"\\$€£¥%(),[]`, parses as one; `(12)` is negative, `12%` is
0.12, and a scale word after a number (`3.8 million`) multiplies it unless scale is ignored;
values are rounded to 4 decimals. Answers are normalised token by token (lower-case,
punctuation dropped except inside numbers, numbers rewritten as their value, articles
dropped). Written from those definitions; pure functions, no I/O.
"""

from __future__ import annotations

import math
import re
import string

_NOT_IN_NUMBER = str.maketrans("", "", "'\"\\$€£¥%(),[]")
_FIRST_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?|[+-]?\.\d+")
_NEGATIVE = re.compile(r"\([\d.\s]+\)")
_PERCENT = re.compile(r"[\d.\s]+%")
_SCALED = re.compile(r"[\d.]+\s?[a-zA-Z]+")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def scale_factor(scale: str) -> float:
    """The multiplier a scale word stands for (`million` → 1e6, `percent` → 0.01, else 1)."""
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


def to_number(text: str, ignore_scale: bool) -> int | float | None:
    """The first number in `text`, signed, as a fraction when followed by %, and scaled by a
    scale word right after a number unless `ignore_scale`; None when there is no number."""
    found = _FIRST_NUMBER.search(text.translate(_NOT_IN_NUMBER))
    if found is None:
        return None
    digits = found.group()
    value: int | float = float(digits) if "." in digits else int(digits)
    if _NEGATIVE.search(text.strip()):
        value = -value
    if _PERCENT.search(text.strip()):
        value = value * 0.01
    if not ignore_scale:
        scaled = _SCALED.search(text)
        if scaled:
            value = value * scale_factor(scaled.group())
    return round(value, 4)


def normalize_finance_answer(text: str, ignore_scale: bool) -> str:
    """Token by token: lower-case, drop punctuation unless the token is a number, write
    numbers as their value, drop articles; tokens left empty disappear."""
    parts = []
    for token in text.split(" "):
        token = token.lower()
        if not is_number(token):
            token = "".join(ch for ch in token if ch not in _PUNCTUATION)
        if is_number(token) and (value := to_number(token, ignore_scale)) is not None:
            token = str(value)
        token = " ".join(_ARTICLES.sub(" ", token).split())
        if token:
            parts.append(token)
    return " ".join(parts)


def answer_bag(text: str, ignore_scale: bool) -> tuple[str, frozenset[str]]:
    """The normalised answer (numbers rewritten once more, token by token) and its token set."""
    tokens = [
        str(to_number(t, ignore_scale)) if is_number(t) else t
        for t in normalize_finance_answer(text, ignore_scale).split()
    ]
    return " ".join(tokens), frozenset(tokens)


def bag_f1(predicted: frozenset[str], gold: frozenset[str]) -> float:
    """DROP's F1 of two token sets (an empty set has precision/recall 1)."""
    common = len(predicted & gold)
    precision = common / len(predicted) if predicted else 1.0
    recall = common / len(gold) if gold else 1.0
    if precision == 0.0 and recall == 0.0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def final_answer(response: str) -> str:
    """The text after the last `The answer is:` (UDA's prompts end answers so), else all."""
    return response.split("The answer is:")[-1]
