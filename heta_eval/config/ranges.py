"""The numbers a component argument allows, defined once beside the component.

A `Range` serves both checks: the component's own (`RANGE.check("k1", k1)` in its
constructor) and the check of a configuration before any work, through the parameter's type
(`Annotated[float, AfterValidator(RANGE)]`, read by `config.components.check_argument_types`).
A finite number far outside what the component was made for (`k1=1e100`) would otherwise
give a run of zeros, not an error; `true` is not a number here, as it is in Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator

MAX_TOP_K = 100_000
"""Results per query at most (`runner.top_k`, fusion depths, reranked and scored depths)."""
MAX_CHUNK_SIZE = 10_000_000
"""Words, tokens or characters of a chunk at most; null chunk sizes keep whole documents."""


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e16 else f"{value:g}"


@dataclass(frozen=True)
class Range:
    """The numbers an argument allows: from `low` to `high` (None: unbounded on that side),
    each end included unless `low_open` / `high_open`. Booleans are not numbers here."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def __str__(self) -> str:
        low = None if self.low is None else _number(self.low)
        high = None if self.high is None else _number(self.high)
        if high is None:
            return f"> {low}" if self.low_open else f">= {low}"
        if low is None:
            return f"< {high}" if self.high_open else f"<= {high}"
        return f"{'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"

    def contains(self, value: Any) -> bool:
        """Whether `value` is a number (not a bool) within the range."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def check(self, name: str, value: Any) -> None:
        """Raise ValueError naming `name`, the allowed range and `value` unless it is in it."""
        if not self.contains(value):
            where = f"within {self}" if None not in (self.low, self.high) else str(self)
            raise ValueError(f"{name} must be a number {where}, got {value!r}")

    def __call__(self, value: Any) -> Any:
        """As a pydantic `AfterValidator`: `value` if it is in the range, else ValueError."""
        if not self.contains(value):
            raise ValueError(f"out of range; allowed: {self}")
        return value


# Ranges several components share (each component's own are defined beside it).
TOP_K_RANGE = Range(1, MAX_TOP_K)
"""A depth: results kept, reranked, read or scored (`k` of a metric, `top_n`, `depth`)."""
BATCH_SIZE_RANGE = Range(1, 100_000)
TEMPERATURE_RANGE = Range(0, 2)
"""Sampling temperature, as OpenAI-compatible APIs accept it."""
MAX_TOKENS_RANGE = Range(1, 1_000_000)
"""Tokens an LLM may generate, or read as context."""

TopK = Annotated[int, AfterValidator(TOP_K_RANGE)]
BatchSize = Annotated[int, AfterValidator(BATCH_SIZE_RANGE)]
Temperature = Annotated[float, AfterValidator(TEMPERATURE_RANGE)]
MaxTokens = Annotated[int, AfterValidator(MAX_TOKENS_RANGE)]
