"""What a user component returns, checked where it crosses into the run.

An evaluator's `evaluate` must return one `EvaluationScore`; anything else (a list of them, a
bare number, a dict) fails that case with a message that names the evaluator, what it
returned and what it must return, instead of ending the run deep inside pydantic. The score
must carry the name the evaluator declares (`name`): a score named like another evaluator's
metric would give a case two values of one metric, which the report and a comparison would
read differently; such a case fails, naming both evaluators.
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
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


def _named(evaluator: Any) -> str:
    cls = type(evaluator)
    return f"evaluator {evaluator.name!r} ({cls.__module__}.{cls.__qualname__})"


def checked_score(evaluator: Any, value: Any, evaluators: Sequence[Any] = ()) -> EvaluationScore:
    """`value` if it is one EvaluationScore named as `evaluator` declares, else
    `ComponentReturnError` saying so (naming the one of `evaluators` whose name it took)."""
    if not isinstance(value, EvaluationScore):
        raise ComponentReturnError(
            f"{_named(evaluator)} returned {describe(value)}; evaluate() must "
            "return one heta_eval.records.EvaluationScore"
        )
    if value.name == evaluator.name:
        return value
    owner = next((e for e in evaluators if e is not evaluator and e.name == value.name), None)
    clash = f", the name of {_named(owner)}" if owner is not None else ""
    raise ComponentReturnError(
        f"{_named(evaluator)} returned a score named {value.name!r}{clash}; an evaluator may "
        f"only return scores named as it declares ({evaluator.name!r})"
    )
