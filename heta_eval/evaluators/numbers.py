"""Reading numbers the way answers write them: percents, signs, separators, precision."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_NUMBER = re.compile(
    r"""
    (?P<paren>\()?                    # accounting negatives: (1,234)
    (?P<sign>[-+\u2212])?\s*
    (?P<currency>[$\u20ac\u00a3])?\s*
    (?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)
    \s*(?P<percent>%|percent\b)?
    (?P<close>\))?
    """,
    re.VERBOSE | re.IGNORECASE,
)


@dataclass(frozen=True)
class ParsedNumber:
    """A number found in text, with the decimals it was written with and whether it is a %."""

    value: float
    decimals: int
    percent: bool

    def forms(self) -> tuple[float, ...]:
        """The values this number may stand for: 57% is 57 and 0.57; 0.57 is also 57%."""
        if self.percent:
            return (self.value, self.value / 100.0)
        return (self.value, self.value * 100.0)


def parse_numbers(text: str) -> list[ParsedNumber]:
    """Every number in `text`, in order of appearance."""
    numbers = []
    for match in _NUMBER.finditer(text):
        digits = match["digits"].replace(",", "")
        value = float(digits)
        negative = match["sign"] in ("-", "\u2212") or (match["paren"] and match["close"])
        decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
        numbers.append(
            ParsedNumber(
                value=-value if negative else value,
                decimals=decimals,
                percent=bool(match["percent"]),
            )
        )
    return numbers


def parse_number(text: str) -> ParsedNumber | None:
    """The number `text` consists of (e.g. "$ 17,966 million" → 17966), or None.

    A text holding more than one number, or none, is not a number.
    """
    found = parse_numbers(text)
    return found[0] if len(found) == 1 else None


def numbers_match(
    predicted: ParsedNumber,
    expected: ParsedNumber,
    rel_tol: float = 1e-2,
    abs_tol: float = 1e-9,
) -> bool:
    """Whether `predicted` states `expected`.

    Any percent form of one may meet any form of the other (57% ≈ 0.57484). They match when
    within `rel_tol`/`abs_tol` of each other, or when the prediction rounded to the number
    of decimals the expected answer shows equals it (57.484 → "57%").
    """
    for p in predicted.forms():
        for e in expected.forms():
            if math.isclose(p, e, rel_tol=rel_tol, abs_tol=abs_tol):
                return True
    for p in predicted.forms():
        if round(p, expected.decimals) == round(expected.value, expected.decimals):
            return True
    return False
