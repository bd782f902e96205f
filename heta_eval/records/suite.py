"""A suite: a named family of benchmarks (its members) with published reference numbers.

A suite is defined in `conf/suite/<name>.yaml` under the key `suite` (see docs/suites.md):
its members are the values of one override (`member_key`, e.g. `benchmark.subset`) that the
suite sweeps, and each reference is a published number for one member, recipe and metric,
with its citation, the tolerance within which we claim to reproduce it, and how our setup
differs from the paper's where it does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from heta_eval.records._base import NonEmptyStr, Record


class SuiteReference(Record):
    """One published number: `value` of `metric` for `recipe` on `member`.

    `metric` is mode-free (`ndcg@10`, read under the run's primary query mode) or names a
    mode (`bm25.ndcg@10`). `scope` restricts the cases it is averaged over to those of some
    run units (documents), as published; `overrides` are the settings (beyond the member and
    the recipe) the number needs, e.g. `benchmark.source=qa_table`. `tolerance` null: shown
    for reference, never checked (a different setup). `quick`: cheap enough for CI."""

    member: NonEmptyStr
    recipe: NonEmptyStr
    metric: NonEmptyStr
    value: float
    source: NonEmptyStr
    tolerance: float | None = Field(default=None, ge=0)
    differs: str | None = None
    overrides: tuple[str, ...] = ()
    scope_units: tuple[str, ...] = ()
    cases: int | None = Field(default=None, ge=1)
    quick: bool = False

    @property
    def checked(self) -> bool:
        return self.tolerance is not None

    def within(self, ours: float) -> bool:
        """Whether `ours` reproduces the number (|ours - value| <= tolerance, rounding
        noise allowed)."""
        return self.tolerance is not None and abs(ours - self.value) <= self.tolerance + 1e-9

    def applies_to(self, recipe: str | None, params: Mapping[str, str]) -> bool:
        """Whether a run of `recipe` with these (flattened) params is this number's setup."""
        if recipe != self.recipe:
            return False
        for override in self.overrides:
            key, _, value = override.partition("=")
            if str(params.get(key.lstrip("+"), "")) != value:
                return False
        return True


class SuiteDefinition(Record):
    """A suite (`conf/suite/<name>.yaml`, key `suite`): its members, how a member is chosen
    (`member_key`), the metric its table shows and its published references."""

    name: NonEmptyStr
    description: str = ""
    member_key: NonEmptyStr
    members: tuple[NonEmptyStr, ...]
    metric: str | None = None
    # A member scored under another name (UDA tat: `uda_evidence_match_ext@5`, our extension):
    # shown with that name, left out of the macro average of `metric`.
    member_metrics: dict[NonEmptyStr, NonEmptyStr] = {}
    data_dir: str | None = None
    data_root: str | None = None
    references: tuple[SuiteReference, ...] = ()

    @field_validator("members")
    @classmethod
    def _members(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError(f"members must be unique, got {list(value)}")
        return value

    @model_validator(mode="after")
    def _references_name_members(self) -> SuiteDefinition:
        unknown = sorted(set(self.member_metrics) - set(self.members))
        if self.members and unknown:
            raise ValueError(
                f"member_metrics names {unknown}: not members of suite {self.name!r} "
                f"({', '.join(self.members)})"
            )
        for ref in self.references:
            if self.members and ref.member not in self.members:
                raise ValueError(
                    f"reference for member {ref.member!r} ({ref.recipe}, {ref.metric}): "
                    f"not a member of suite {self.name!r} ({', '.join(self.members)})"
                )
        return self

    def metric_for(self, member: str, metric: str) -> str:
        """The metric a member's cell shows: its own (`member_metrics`) or `metric`."""
        return self.member_metrics.get(member, metric)

    def references_for(self, member: str) -> list[SuiteReference]:
        return [r for r in self.references if r.member == member]


def suite_from_config(spec: Any, where: str = "suite") -> SuiteDefinition:
    """The suite of a resolved `suite` node, with errors that name the field."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"{where}: expected a mapping, got {type(spec).__name__}")
    data = dict(spec)
    for key in ("members",):
        if isinstance(data.get(key), str):
            data[key] = [m.strip() for m in data[key].split(",") if m.strip()]
    try:
        return SuiteDefinition.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = "".join(f".{p}" for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        raise ValueError(f"{where}{loc}: {message}") from None
