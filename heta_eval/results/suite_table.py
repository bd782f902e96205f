"""The table a suite sweep ends with: rows = members, columns = recipes (what else the sweep
varies), cells = the suite's metric with its CI, a macro-average row, and the published
reference with Δ where one applies; then every reference of the suite's members that the
sweep ran, 2CR-style (published, ours, Δ, within its tolerance or not, its citation).

Built from the sweep's rows (`sweep_summary.SweepRow`) and the suite's definition
(`records.suite`); a reference restricted to some documents (`scope_units`) is averaged over
those cases of the run's report.json. Rendered by `suite_render`.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationReport
from heta_eval.records.suite import SuiteDefinition, SuiteReference
from heta_eval.results.sweep_rows import SweepRow, split_overrides
from heta_eval.tracking.naming import PRIMARY_MODE_TAG, metric_name

SUITE_TAG = "heta_eval.suite"
SUITE_MEMBER_TAG = "heta_eval.suite_member"
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Cell:
    """One member x column: the run's mean of the suite's metric and its CI."""

    run_id: str
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    scored: int | None = None
    metric: str | None = None  # set when the member is scored under another metric


@dataclass(frozen=True)
class ReferenceRow:
    """A published number beside ours: Δ = ours - published; `ok` None when not checked."""

    reference: SuiteReference
    column: str
    run_id: str
    ours: float | None
    cases: int | None
    note: str = ""

    @property
    def delta(self) -> float | None:
        return None if self.ours is None else self.ours - self.reference.value

    @property
    def ok(self) -> bool | None:
        if not self.reference.checked:
            return None
        return self.ours is not None and self.reference.within(self.ours)


@dataclass
class SuiteTable:
    """The members x columns table of a suite sweep, with its macro average and references."""

    suite: SuiteDefinition
    metric: str
    members: list[str]
    columns: list[str]
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    references: list[ReferenceRow] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def macro(self, column: str) -> tuple[float | None, float | None, float | None, int]:
        """Mean over the members with a value of the table's metric, its approximate 95% CI
        (from the members' CIs as normal standard errors) and how many members it averages.
        A member scored under another metric (`Cell.metric`) is not averaged in."""
        cells = [self.cells.get((m, column)) for m in self.members]
        cells = [c for c in cells if c is None or c.metric is None]
        values = [c for c in cells if c is not None and c.value is not None]
        if not values:
            return None, None, None, 0
        mean = math.fsum(c.value for c in values) / len(values)  # type: ignore[misc]
        if any(c.ci_low is None or c.ci_high is None for c in values):
            return mean, None, None, len(values)
        se = math.sqrt(
            math.fsum(((c.ci_high - c.ci_low) / (2 * Z95)) ** 2 for c in values)  # type: ignore[operator]
        ) / len(values)
        # Never wider than the members' own intervals reach (scores are bounded).
        low = max(mean - Z95 * se, min(c.ci_low for c in values))  # type: ignore[type-var]
        high = min(mean + Z95 * se, max(c.ci_high for c in values))  # type: ignore[type-var]
        return mean, low, high, len(values)

    def headline_reference(self, member: str, column: str) -> ReferenceRow | None:
        """The reference shown in the main table for this cell: one on the table's metric,
        a checked one first."""
        same = [
            r
            for r in self.references
            if r.reference.member == member
            and r.column == column
            and metric_name(r.reference.metric) == metric_name(self.metric)
        ]
        same.sort(key=lambda r: (not r.reference.checked, bool(r.reference.scope_units)))
        return same[0] if same else None


def member_of(row: SweepRow, suite: SuiteDefinition) -> str | None:
    """The member a job ran: its value of the suite's member key."""
    return row.tags.get(SUITE_MEMBER_TAG) or split_overrides(row.overrides).get(suite.member_key)


def column_of(row: SweepRow, varied: Sequence[str]) -> str:
    """The column of a job: its recipe when only the recipe varies besides the member, else
    `key=value` of every varied override."""
    overrides = split_overrides(row.overrides)
    if list(varied) == ["recipe"] or not varied:
        return overrides.get("recipe") or row.tags.get("recipe.name") or "run"
    return " ".join(f"{k}={overrides[k]}" for k in varied if k in overrides) or "run"


def _cell(row: SweepRow, metric: str, other: str | None = None) -> Cell:
    name = metric_name(metric)
    mode = row.tags.get(PRIMARY_MODE_TAG, "")
    scored = row.metrics.get(f"{name}.scored")
    if scored is None and "." not in metric and mode:
        scored = row.metrics.get(f"{mode}.{name}.scored")
    return Cell(
        run_id=row.run_id,
        value=row.metrics.get(name),
        ci_low=row.metrics.get(f"{name}.ci_low"),
        ci_high=row.metrics.get(f"{name}.ci_high"),
        scored=None if scored is None else int(scored),
        metric=other,
    )


def scoped_mean(
    report: EvaluationReport, metric: str, units: Sequence[str]
) -> tuple[float | None, int]:
    """Mean of `metric` (mode-free: the report's primary mode; `mode.metric` otherwise)
    over the scored cases of the run units `units` (all units when empty)."""
    mode, _, name = metric.rpartition(".")
    if not mode or mode not in report.query_modes:
        mode, name = report.primary_query_mode or "", metric
    values = [
        v
        for r in report.case_results
        if r.query_mode == mode
        and (not units or r.unit_id in units)
        and (v := r.score(name)) is not None
    ]
    return (math.fsum(values) / len(values) if values else None), len(values)


class _Reports:
    """report.json of child runs, downloaded once each."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._tmp = tempfile.TemporaryDirectory(prefix="heta-eval-suite-")
        self._cache: dict[str, EvaluationReport] = {}

    def get(self, run_id: str) -> EvaluationReport:
        if run_id not in self._cache:
            dest = Path(self._tmp.name) / run_id
            dest.mkdir(parents=True, exist_ok=True)
            local = self.client.download_artifacts(run_id, "report.json", str(dest))
            self._cache[run_id] = EvaluationReport.read_json(Path(local))
        return self._cache[run_id]

    def close(self) -> None:
        self._tmp.cleanup()


def reference_row(
    ref: SuiteReference,
    column: str,
    run_id: str,
    metrics: Mapping[str, float],
    report: Any,
) -> ReferenceRow:
    """Our number for `ref` from a run's metrics, or from its report (`report()`, called
    only when the reference is scoped to some documents)."""
    if not ref.scope_units:
        name = metric_name(ref.metric)
        return ReferenceRow(ref, column, run_id, metrics.get(name), None)
    ours, n = scoped_mean(report(), ref.metric, ref.scope_units)
    note = ""
    if ref.cases is not None and n != ref.cases:
        note = f"{n} case(s) scored where the source has {ref.cases}"
    return ReferenceRow(ref, column, run_id, ours, n, note)


def build_suite_table(
    rows: Sequence[SweepRow],
    suite: SuiteDefinition,
    client: Any,
    metric: str | None = None,
    varied: Sequence[str] = (),
) -> SuiteTable:
    """The suite's table from a sweep's rows (see the module docstring); `metric` is the
    suite's own (`suite.metric`) unless given; `varied` are the overrides besides the member
    key whose values differ between the jobs."""
    chosen = metric or suite.metric or "ndcg@10"
    finished = [r for r in rows if r.ok]
    found = {member_of(r, suite) for r in finished}
    members = [m for m in suite.members if m in found] + sorted(
        m for m in found if m and m not in suite.members
    )
    members += [m for m in suite.members if m not in members]
    columns = list(dict.fromkeys(column_of(r, varied) for r in finished))
    table = SuiteTable(suite=suite, metric=chosen, members=members, columns=columns)
    table.failed = [
        f"{member_of(r, suite) or '?'} · {column_of(r, varied)}: {r.status}"
        + (f" ({r.error})" if r.error else "")
        for r in rows
        if not r.ok
    ]
    reports = _Reports(client)
    try:
        for row in finished:
            member, column = member_of(row, suite), column_of(row, varied)
            if member is None:
                continue
            own = chosen if metric else suite.metric_for(member, chosen)
            table.cells[(member, column)] = _cell(row, own, None if own == chosen else own)
            refs = suite.references_for(member)
            if not refs:
                continue
            params = dict(client.get_run(row.run_id).data.params)
            recipe = row.tags.get("recipe.name")
            for ref in refs:
                if ref.applies_to(recipe, params):
                    table.references.append(
                        reference_row(
                            ref,
                            column,
                            row.run_id,
                            row.metrics,
                            lambda rid=row.run_id: reports.get(rid),
                        )
                    )
    finally:
        reports.close()
    return table
