"""Pair case results across runs and test every run against a baseline, Holm-corrected.

Cases are paired by (unit_id, case_id, query_mode); a metric `"{query_mode}.{metric}"` pairs
the cases where both runs have a numeric value. Binary metrics get McNemar's exact test,
anything else a paired randomisation (sign-flip) test on the per-case differences.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from heta_eval.compare.loading import CompareError, LoadedRun, select_metrics
from heta_eval.evaluators.statistics import bootstrap_ci
from heta_eval.records import EvaluationReport

MCNEMAR = "McNemar exact"
RANDOMIZATION = "paired randomization"
_BLOCK_CELLS = 2_000_000  # sign-flip matrices are drawn in blocks of at most this many cells

CaseKey = tuple[str, str, str]  # (unit_id, case_id, query_mode)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RunCell(_Frozen):
    """One run under one metric; the fields after `scored` compare it with the baseline."""

    run: str
    mean: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    scored: int
    paired: int | None = None
    excluded: int | None = None
    difference: float | None = None
    test: str | None = None
    p_value: float | None = None
    p_holm: float | None = None
    significant: bool | None = None
    wins: int | None = None
    losses: int | None = None
    ties: int | None = None


class MetricRow(_Frozen):
    """A metric (`"{query_mode}.{metric}"`) across every compared run."""

    metric: str
    cells: tuple[RunCell, ...]

    def cell(self, run: str) -> RunCell:
        return next(c for c in self.cells if c.run == run)


class RunInfo(_Frozen):
    label: str
    source: str
    run_id: str | None = None
    sweep_run_id: str | None = None
    report_id: str
    benchmark: str
    recipe: str


class Comparison(_Frozen):
    """Every number of a comparison: one row per metric, one cell per run."""

    runs: tuple[RunInfo, ...]
    baseline: str
    metrics: tuple[str, ...]
    rows: tuple[MetricRow, ...]
    cases: int
    resamples: int
    seed: int
    alpha: float
    confidence: float
    comparisons: int

    def row(self, metric: str) -> MetricRow:
        return next(r for r in self.rows if r.metric == metric)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input's order (monotone in the raw p)."""
    m = len(pvalues)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda j: pvalues[j])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def mcnemar_exact(baseline: Sequence[float], other: Sequence[float]) -> float:
    """Two-sided exact McNemar test: a binomial test on the discordant pairs (1.0 without any)."""
    base = np.asarray(baseline) == 1
    alt = np.asarray(other) == 1
    b = int(np.sum(base & ~alt))
    c = int(np.sum(~base & alt))
    if b + c == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(b, b + c, 0.5).pvalue)


def randomization_test(differences: Sequence[float], resamples: int, seed: int) -> float:
    """Two-sided paired sign-flip test of mean difference 0, seeded.

    p = (#{|mean of randomly sign-flipped differences| >= |observed mean|} + 1) / (resamples + 1);
    1.0 when every difference is 0.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        raise ValueError("no differences to test")
    if not np.any(d):
        return 1.0
    total = float(d.sum())
    # Sums in another order differ in the last bits; equal sums must still count as extreme.
    threshold = abs(total) - 1e-9 * float(np.abs(d).sum())
    rng = np.random.default_rng(seed)
    rows = max(1, _BLOCK_CELLS // d.size)
    extreme = 0
    for start in range(0, resamples, rows):
        flips = rng.random((min(rows, resamples - start), d.size)) < 0.5
        sums = total - 2.0 * (flips @ d)  # flipping a difference's sign subtracts it twice
        extreme += int(np.count_nonzero(np.abs(sums) >= threshold))
    return (extreme + 1) / (resamples + 1)


def _case_values(report: EvaluationReport, label: str) -> dict[CaseKey, dict[str, float | None]]:
    values: dict[CaseKey, dict[str, float | None]] = {}
    for result in report.case_results:
        key = (result.unit_id, result.case_id, result.query_mode)
        if key in values:
            raise CompareError(f"run {label!r} has more than one result for case {_show(key)}")
        values[key] = {s.name: None if s.undetermined else s.value for s in result.scores}
    return values


def _show(key: CaseKey) -> str:
    return "/".join(key)


def check_same_cases(labels: Sequence[str], keys: Sequence[set[CaseKey]]) -> None:
    """Refuse runs that do not cover the same (unit_id, case_id, query_mode) keys."""
    for label, other in zip(labels[1:], keys[1:], strict=True):
        only_first, only_other = sorted(keys[0] - other), sorted(other - keys[0])
        if only_first or only_other:
            parts = []
            for name, only in ((labels[0], only_first), (label, only_other)):
                if only:
                    examples = ", ".join(_show(k) for k in only[:3])
                    parts.append(f"{len(only)} only in {name!r} (e.g. {examples})")
            raise CompareError(
                f"runs {labels[0]!r} and {label!r} do not cover the same cases: "
                + "; ".join(parts)
                + " — compare runs of the same benchmark, split, limit and query modes"
            )


def _as_runs(runs: Sequence[LoadedRun | EvaluationReport]) -> list[LoadedRun]:
    loaded = []
    for i, run in enumerate(runs):
        if isinstance(run, EvaluationReport):
            name = str(run.recipe_manifest.get("name") or run.knowledge_base_name)
            run = LoadedRun(label=f"{name} #{i}", report=run, source=f"<report {run.report_id}>")
        loaded.append(run)
    if len({r.label for r in loaded}) != len(loaded):
        raise CompareError("run labels must be unique")
    return loaded


def _baseline_index(runs: Sequence[LoadedRun], baseline: int | str) -> int:
    if isinstance(baseline, int):
        if not 0 <= baseline < len(runs):
            raise CompareError(f"baseline index {baseline} is out of range 0..{len(runs) - 1}")
        return baseline
    for i, run in enumerate(runs):
        if baseline in (run.label, run.run_id, run.source):
            return i
    if baseline.isdigit():
        return _baseline_index(runs, int(baseline))
    labels = ", ".join(repr(r.label) for r in runs)
    raise CompareError(f"baseline {baseline!r} is none of the runs ({labels})")


def _cell(label: str, values: list[float], resamples: int, seed: int, confidence: float) -> dict:
    interval = bootstrap_ci(values, resamples, confidence, seed) if values else None
    return {
        "run": label,
        "mean": math.fsum(values) / len(values) if values else None,
        "ci_low": interval[0] if interval else None,
        "ci_high": interval[1] if interval else None,
        "scored": len(values),
    }


def _paired(base: list[float | None], other: list[float | None], resamples: int, seed: int):
    pairs = [(b, o) for b, o in zip(base, other, strict=True) if b is not None and o is not None]
    stats: dict = {"paired": len(pairs), "excluded": len(base) - len(pairs)}
    if not pairs:
        return stats
    b = np.array([p[0] for p in pairs])
    o = np.array([p[1] for p in pairs])
    diffs = o - b
    binary = bool(np.all(np.isin(b, (0.0, 1.0))) and np.all(np.isin(o, (0.0, 1.0))))
    stats.update(
        difference=math.fsum(diffs) / len(diffs),
        test=MCNEMAR if binary else RANDOMIZATION,
        p_value=mcnemar_exact(b, o) if binary else randomization_test(diffs, resamples, seed),
        wins=int(np.sum(o > b)),
        losses=int(np.sum(o < b)),
        ties=int(np.sum(o == b)),
    )
    return stats


def compare_reports(
    runs: Sequence[LoadedRun | EvaluationReport],
    baseline: int | str = 0,
    metrics: Iterable[str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> Comparison:
    """Compare every run with the baseline on every metric (see the module docstring).

    Means and bootstrap CIs use all of a run's numeric values (they equal its score
    summary); differences, tests and wins/losses/ties use the paired cases only. Holm's
    correction covers every (metric, run) comparison of the table.
    """
    given = _as_runs(runs)
    if len(given) < 2:
        raise CompareError(f"need at least two runs to compare, got {len(given)}")
    if resamples < 1:
        raise CompareError(f"resamples must be >= 1, got {resamples}")
    if not 0 < alpha < 1:
        raise CompareError(f"alpha must be within (0, 1), got {alpha}")
    base_i = _baseline_index(given, baseline)
    # The baseline goes first while computing; the output keeps the runs in the given order.
    loaded = [given[base_i], *(r for i, r in enumerate(given) if i != base_i)]
    position = {run.label: i for i, run in enumerate(given)}
    values = [_case_values(r.report, r.label) for r in loaded]
    check_same_cases([r.label for r in loaded], [set(v) for v in values])
    chosen = select_metrics([r.report for r in loaded], metrics)
    keys = sorted(values[0])

    raw_rows: list[list[dict]] = []
    for mode, name in chosen:
        mode_keys = [k for k in keys if k[2] == mode]
        columns = [[v[k].get(name) for k in mode_keys] for v in values]
        row = []
        for run, column in zip(loaded, columns, strict=True):
            scored = [x for x in column if x is not None]
            cell = _cell(run.label, scored, resamples, seed, confidence)
            if run is not loaded[0]:
                cell.update(_paired(columns[0], column, resamples, seed))
            row.append(cell)
        raw_rows.append(row)

    tested = [c for row in raw_rows for c in row if c.get("p_value") is not None]
    for cell, adjusted in zip(tested, holm([c["p_value"] for c in tested]), strict=True):
        cell["p_holm"] = adjusted
        cell["significant"] = adjusted < alpha
    rows = tuple(
        MetricRow(
            metric=f"{mode}.{name}",
            cells=tuple(RunCell(**c) for c in sorted(row, key=lambda c: position[c["run"]])),
        )
        for (mode, name), row in zip(chosen, raw_rows, strict=True)
    )
    infos = tuple(
        RunInfo(
            label=r.label,
            source=r.source,
            run_id=r.run_id,
            sweep_run_id=r.sweep_run_id,
            report_id=r.report.report_id,
            benchmark=r.report.benchmark.key,
            recipe=str(r.report.recipe_manifest.get("name", "?")),
        )
        for r in given
    )
    return Comparison(
        runs=infos,
        baseline=loaded[0].label,
        metrics=tuple(row.metric for row in rows),
        rows=rows,
        cases=len(keys),
        resamples=resamples,
        seed=seed,
        alpha=alpha,
        confidence=confidence,
        comparisons=len(tested),
    )
