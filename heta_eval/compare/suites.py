"""Comparing suite sweeps: runs paired per member (the same benchmark), then the macro
average over the members.

Each run of a suite sweep names its member (`suite.member_key` and that key's value in its
params). The runs of each member are compared as any runs are (`compare_reports`: paired
tests, Holm within the member, power); the macro average of a (run, against) pair is the
unweighted mean of its members' Δ, with the standard error of the members' mean paired
differences combined as independent (SE = sqrt(Σ s_m² / n_m) / M), a two-sided z-test and the
normal-approximation power (`power.normal_power`); Holm's correction covers the macro tests
(metrics x pairs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from heta_eval.compare.loading import CompareError, LoadedRun, label_runs
from heta_eval.compare.paired import Comparison, compare_reports, holm
from heta_eval.compare.power import Power, normal_power

MEMBER_KEY_PARAM = "suite.member_key"
SUITE_PARAM = "suite.name"


class MacroTest(BaseModel):
    """One (run, against) pair under one metric, averaged over the members both ran."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str
    run: str
    baseline: str
    members: tuple[str, ...]
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    p_holm: float
    significant: bool
    paired: int
    power: Power


class SuiteComparison(BaseModel):
    """Per member, a `Comparison`; then the macro-average tests."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    suite: str
    member_key: str
    members: dict[str, Comparison]
    macro: tuple[MacroTest, ...]
    alpha: float
    unpaired: tuple[str, ...] = ()


def member_of(run: LoadedRun) -> tuple[str, str] | None:
    """(suite, member) of a run of a suite sweep, from its params."""
    key = run.config.get(MEMBER_KEY_PARAM)
    if not key or key not in run.config:
        return None
    return str(run.config.get(SUITE_PARAM, "")), str(run.config[key])


def is_suite_comparison(runs: Sequence[LoadedRun]) -> bool:
    """Whether every run belongs to a suite sweep (and so pairs per member)."""
    return bool(runs) and all(r.sweep_run_id and member_of(r) for r in runs)


def _replace(run: LoadedRun, overrides: tuple[str, ...]) -> LoadedRun:
    from dataclasses import replace

    return replace(run, overrides=overrides)


def compare_suites(
    runs: Sequence[LoadedRun],
    baseline: int | str | None = 0,
    metrics: Iterable[str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    min_overlap: float = 0.5,
    allow_different_data: bool = False,
) -> SuiteComparison:
    """Compare suite runs member by member, then macro-average (see the module docstring).
    `baseline` is resolved within each member (an override such as `recipe=bm25`, or a
    position among that member's runs); runs of a member evaluated on different data are
    refused unless `allow_different_data`, as `compare_reports` does."""
    names = {member_of(r)[0] for r in runs if member_of(r)}  # type: ignore[index]
    if len(names) != 1:
        raise CompareError(f"the runs come from different suites ({', '.join(sorted(names))})")
    suite = names.pop()
    member_key = str(runs[0].config[MEMBER_KEY_PARAM])
    groups: dict[str, list[LoadedRun]] = {}
    for run in runs:
        found = member_of(run)
        assert found is not None
        groups.setdefault(found[1], []).append(run)
    unpaired = tuple(m for m, g in groups.items() if len(g) < 2)
    members: dict[str, Comparison] = {}
    for member, group in groups.items():
        if len(group) < 2:
            continue
        # Labels say what differs within the member (the member key itself does not).
        group = label_runs([_replace(r, _without(r.overrides, member_key)) for r in group])
        members[member] = compare_reports(
            group,
            baseline=baseline,
            metrics=metrics,
            resamples=resamples,
            seed=seed,
            alpha=alpha,
            min_overlap=min_overlap,
            allow_different_data=allow_different_data,
        )
    if not members:
        raise CompareError(
            "no member of the suite has two runs to compare "
            f"(members with one run: {', '.join(unpaired) or 'none'})"
        )
    return SuiteComparison(
        suite=suite,
        member_key=member_key,
        members=members,
        macro=tuple(_macro(members, alpha)),
        alpha=alpha,
        unpaired=unpaired,
    )


def _without(overrides: tuple[str, ...], key: str) -> tuple[str, ...]:
    return tuple(o for o in overrides if o.lstrip("+~").partition("=")[0] != key)


def _macro(members: dict[str, Comparison], alpha: float) -> list[MacroTest]:
    from scipy.stats import norm

    collected: dict[tuple[str, str, str], list[tuple[str, float, float, int]]] = {}
    for member, comparison in members.items():
        for row in comparison.rows:
            for test in row.tests:
                p = test.power
                if test.difference is None or p is None or p.sd is None or test.paired < 2:
                    continue
                key = (row.metric, test.run, test.baseline)
                collected.setdefault(key, []).append(
                    (member, test.difference, p.sd**2 / test.paired, test.paired)
                )

    tests = []
    z = float(norm.ppf(0.975))
    keys = list(collected)
    raw = []
    for items in collected.values():
        m = len(items)
        diff = math.fsum(i[1] for i in items) / m
        se = math.sqrt(math.fsum(i[2] for i in items)) / m
        raw.append(1.0 if se == 0 else float(2 * norm.sf(abs(diff) / se)))
    adjusted = dict(zip(keys, holm(raw), strict=True)) if raw else {}
    for (metric, run, base), items in collected.items():
        m = len(items)
        diff = math.fsum(i[1] for i in items) / m
        se = math.sqrt(math.fsum(i[2] for i in items)) / m
        total = sum(i[3] for i in items)
        p_value = 1.0 if se == 0 else float(2 * norm.sf(abs(diff) / se))
        p_holm = adjusted[(metric, run, base)]
        significant = p_holm < alpha
        tests.append(
            MacroTest(
                metric=metric,
                run=run,
                baseline=base,
                members=tuple(i[0] for i in items),
                difference=diff,
                ci_low=diff - z * se,
                ci_high=diff + z * se,
                p_value=p_value,
                p_holm=p_holm,
                significant=significant,
                paired=total,
                power=normal_power(diff, se, total, alpha, significant),
            )
        )
    return tests
