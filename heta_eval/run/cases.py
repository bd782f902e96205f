"""What a user component returns, checked where it crosses into the run.

An evaluator's `evaluate` must return one `EvaluationScore`; anything else (a list of them, a
bare number, a dict) fails that case with a message that names the evaluator, what it
returned and what it must return, instead of ending the run deep inside pydantic.
"""

from __future__ import annotations

import reprlib
from typing import Any

from heta_eval.records import EvaluationScore

_SHORT = reprlib.Repr()
_SHORT.maxstring = 60
_SHORT.maxother = 60


class ComponentReturnError(TypeError):
    """A component returned something of the wrong type."""


def describe(value: Any) -> str:
    """`a list of 2 EvaluationScore`, `a float (0.5)`, `None`: what a component returned."""
    if value is None:
        return "None"
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    if isinstance(value, list | tuple | set | frozenset):
        kinds = sorted({type(v).__name__ for v in value})
        inner = f" of {len(value)} {'/'.join(kinds)}" if value else " (empty)"
        return f"{article} {kind}{inner}"
    return f"{article} {kind} ({_SHORT.repr(value)})"


def checked_score(evaluator: Any, value: Any) -> EvaluationScore:
    """`value` if it is one EvaluationScore, else `ComponentReturnError` saying so."""
    if isinstance(value, EvaluationScore):
        return value
    cls = type(evaluator)
    raise ComponentReturnError(
        f"evaluator {getattr(evaluator, 'name', cls.__name__)!r} "
        f"({cls.__module__}.{cls.__qualname__}) returned {describe(value)}; evaluate() must "
        "return one heta_eval.records.EvaluationScore"
    )
