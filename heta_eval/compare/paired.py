"""Test runs against a baseline (or every pair of runs) case by case, Holm-corrected.

Cases pair on (unit_id, case_id), each run read under the query mode its metric names (its
primary mode by default; see `pairing`). A metric pairs the cases where both runs have a
numeric value. Binary metrics get McNemar's exact test, anything else a paired
randomisation (sign-flip) test on the per-case differences.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from heta_eval.compare.labels import effective_value, override_items
from heta_eval.compare.loading import CompareError, LoadedRun, label_runs
from heta_eval.compare.pairing import CaseKey, case_overlap, select_metrics
from heta_eval.compare.power import Power, paired_power
from heta_eval.evaluators.statistics import bootstrap_ci
from heta_eval.records import EvaluationReport

MCNEMAR = "McNemar exact"
RANDOMIZATION = "paired randomization"
DEFAULT_MIN_OVERLAP = 0.5
_BLOCK_CELLS = 2_000_000  # sign-flip matrices are drawn in blocks of at most this many cells


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RunMean(_Frozen):
    """One run under one metric: its mean and bootstrap CI over the compared cases."""

    run: str
    query_mode: str
    mean: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    scored: int


class PairTest(_Frozen):
    """`run` against `baseline` under one metric: paired difference (run - baseline) with
    its bootstrap CI, the test, Holm's adjusted p-value, and wins/losses/ties."""

    run: str
    baseline: str
    run_mode: str
    baseline_mode: str
    paired: int
    excluded: int
    difference: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    test: str | None = None
    p_value: float | None = None
    p_holm: float | None = None
    significant: bool | None = None
    wins: int | None = None
    losses: int | None = None
    ties: int | None = None
    power: Power | None = None  # what the comparison could have detected (compare.power)


class MetricRow(_Frozen):
    """A metric across every compared run: `name` read under `modes` (one per run, in the
    runs' order); `metric` is how it is shown (see pairing.MetricSpec)."""

    metric: str
    name: str
    modes: tuple[str, ...]
    means: tuple[RunMean, ...]
    tests: tuple[PairTest, ...]

    def mean(self, run: str) -> RunMean:
        return next(m for m in self.means if m.run == run)

    def test(self, run: str, baseline: str | None = None) -> PairTest:
        return next(t for t in self.tests if t.run == run and baseline in (None, t.baseline))


class RunInfo(_Frozen):
    """A compared run: where it came from, what it evaluated, and the cases left out."""

    label: str
    source: str
    run_id: str | None = None
    sweep_run_id: str | None = None
    report_id: str
    benchmark: str
    recipe: str
    primary_query_mode: str
    overrides: tuple[str, ...] = ()
    data_digest: str | None = None
    cases: int
    left_out: int
    left_out_examples: tuple[str, ...] = ()


class Comparison(_Frozen):
    """Every number of a comparison: one row per metric; the runs' means and the tests of
    each compared pair (against `baseline`, or every pair when `all_pairs`)."""

    runs: tuple[RunInfo, ...]
    baseline: str | None
    all_pairs: bool
    metrics: tuple[str, ...]
    rows: tuple[MetricRow, ...]
    cases: int
    min_overlap: float
    resamples: int
    seed: int
    alpha: float
    confidence: float
    comparisons: int
    different_data: bool = False

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


def _case_values(run: LoadedRun) -> dict[tuple[str, str, str], dict[str, float | None]]:
    values: dict[tuple[str, str, str], dict[str, float | None]] = {}
    for result in run.report.case_results:
        key = (result.unit_id, result.case_id, result.query_mode)
        if key in values:
            raise CompareError(
                f"run {run.label!r} has more than one result for case {'/'.join(key)}"
            )
        values[key] = {s.name: None if s.undetermined else s.value for s in result.scores}
    return values


def _as_runs(runs: Sequence[LoadedRun | EvaluationReport]) -> list[LoadedRun]:
    loaded = []
    for i, run in enumerate(runs):
        if isinstance(run, EvaluationReport):
            name = str(run.recipe_manifest.get("name") or run.knowledge_base_name)
            run = LoadedRun(label=f"{name} #{i}", report=run, source=f"<report {run.report_id}>")
        loaded.append(run)
    if len({r.label for r in loaded}) != len(loaded):
        loaded = label_runs(loaded)
    return loaded


def _baseline_index(runs: Sequence[LoadedRun], baseline: int | str) -> int:
    """The run `baseline` names: a position, a label, a run id or path, or an override
    (`recipe=bm25`) that exactly one run has."""
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
    if "=" in baseline:
        key, _, value = baseline.partition("=")
        key = key.lstrip("+")
        hits = [
            i
            for i, run in enumerate(runs)
            if effective_value(key, override_items(run.overrides), run.config) == value
        ]
        if len(hits) == 1:
            return hits[0]
        if hits:
            many = ", ".join(repr(runs[i].label) for i in hits)
            raise CompareError(f"baseline {baseline!r} matches {len(hits)} runs ({many})")
    raise CompareError(f"baseline {baseline!r} is none of the runs ({labels})")


def _mean(
    label: str, mode: str, values: list[float], resamples: int, seed: int, confidence: float
) -> RunMean:
    interval = bootstrap_ci(values, resamples, confidence, seed) if values else None
    return RunMean(
        run=label,
        query_mode=mode,
        mean=math.fsum(values) / len(values) if values else None,
        ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None,
        scored=len(values),
    )


def _paired(
    base: list[float | None], other: list[float | None], resamples: int, seed: int, conf: float
) -> dict:
    pairs = [(b, o) for b, o in zip(base, other, strict=True) if b is not None and o is not None]
    stats: dict = {"paired": len(pairs), "excluded": len(base) - len(pairs)}
    if not pairs:
        return stats
    b = np.array([p[0] for p in pairs])
    o = np.array([p[1] for p in pairs])
    diffs = o - b
    binary = bool(np.all(np.isin(b, (0.0, 1.0))) and np.all(np.isin(o, (0.0, 1.0))))
    low, high = bootstrap_ci(diffs, resamples, conf, seed) or (None, None)
    stats.update(
        difference=math.fsum(diffs) / len(diffs),
        ci_low=low,
        ci_high=high,
        test=MCNEMAR if binary else RANDOMIZATION,
        p_value=mcnemar_exact(b, o) if binary else randomization_test(diffs, resamples, seed),
        wins=int(np.sum(o > b)),
        losses=int(np.sum(o < b)),
        ties=int(np.sum(o == b)),
        differences=diffs,
    )
    return stats


def data_digest(report: EvaluationReport) -> str | None:
    """The digest of the data a run evaluated (None for a report without an identity)."""
    return report.run.identity.data if report.run.identity is not None else None


def check_same_data(runs: Sequence[LoadedRun], allow: bool) -> bool:
    """Whether the runs evaluated different data; CompareError when they did and `allow` is
    false: a difference in their scores would be the data's, not the recipe's. Runs whose
    report has no identity (older reports) are not counted as different."""
    digests = {r.label: data_digest(r.report) for r in runs}
    known = {d for d in digests.values() if d is not None}
    if len(known) < 2:
        return False
    if not allow:
        shown = ", ".join(f"{label}: {(d or 'unknown')[:12]}" for label, d in digests.items())
        raise CompareError(
            "the runs were evaluated on different data (data digests "
            f"{shown}): the same benchmark name, other documents or cases, so a difference "
            "would not be the recipe's; pass --allow-different-data (allow_different_data=True) "
            "to compare them anyway"
        )
    return True


def compare_reports(
    runs: Sequence[LoadedRun | EvaluationReport],
    baseline: int | str | None = 0,
    metrics: Iterable[str] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    confidence: float = 0.95,
    min_overlap: float = DEFAULT_MIN_OVERLAP,
    allow_different_data: bool = False,
) -> Comparison:
    """Compare every run with the baseline, or every pair when `baseline` is None, on every
    metric (see the module docstring).

    Means, CIs, differences and tests use the cases every run has; cases of one run only are
    left out and counted (refused below `min_overlap` of a run's cases). Holm's correction
    covers every (metric, pair) test of the comparison. Runs evaluated on different data
    (their identities' data digests differ: an edited document or expected answer under the
    same benchmark name) are refused unless `allow_different_data`; then the comparison says
    so (`different_data`) in every output.
    """
    loaded = _as_runs(runs)
    if len(loaded) < 2:
        raise CompareError(f"need at least two runs to compare, got {len(loaded)}")
    different_data = check_same_data(loaded, allow_different_data)
    if resamples < 1:
        raise CompareError(f"resamples must be >= 1, got {resamples}")
    if not 0 < alpha < 1:
        raise CompareError(f"alpha must be within (0, 1), got {alpha}")
    if not 0 <= min_overlap <= 1:
        raise CompareError(f"min_overlap must be within [0, 1], got {min_overlap}")
    base_i = None if baseline is None else _baseline_index(loaded, baseline)
    if base_i is None:
        pairs = list(itertools.combinations(range(len(loaded)), 2))
    else:
        pairs = [(base_i, i) for i in range(len(loaded)) if i != base_i]
    values = [_case_values(r) for r in loaded]
    overlap = case_overlap(loaded, min_overlap)
    specs = select_metrics(loaded, metrics)

    def column(i: int, mode: str, name: str, keys: Sequence[CaseKey]) -> list[float | None]:
        return [values[i].get((*k, mode), {}).get(name) for k in keys]

    rows = []
    for spec in specs:
        columns = [column(i, m, spec.name, overlap.common) for i, m in enumerate(spec.modes)]
        means = tuple(
            _mean(run.label, mode, [x for x in col if x is not None], resamples, seed, confidence)
            for run, mode, col in zip(loaded, spec.modes, columns, strict=True)
        )
        tests = [
            {
                "run": loaded[j].label,
                "baseline": loaded[i].label,
                "run_mode": spec.modes[j],
                "baseline_mode": spec.modes[i],
                **_paired(columns[i], columns[j], resamples, seed, confidence),
            }
            for i, j in pairs
        ]
        rows.append((spec, means, tests))

    tested = [t for _, _, tests in rows for t in tests if t.get("p_value") is not None]
    for test, adjusted in zip(tested, holm([t["p_value"] for t in tested]), strict=True):
        test["p_holm"] = adjusted
        test["significant"] = adjusted < alpha
    for test in (t for _, _, tests in rows for t in tests):
        diffs = test.pop("differences", None)
        if diffs is not None:
            test["power"] = paired_power(diffs, alpha, test.get("significant"))
    infos = tuple(
        RunInfo(
            label=r.label,
            source=r.source,
            run_id=r.run_id,
            sweep_run_id=r.sweep_run_id,
            report_id=r.report.report_id,
            benchmark=r.report.benchmark.key,
            recipe=str(r.report.recipe_manifest.get("name", "?")),
            primary_query_mode=r.report.primary_query_mode or "",
            overrides=r.overrides,
            data_digest=data_digest(r.report),
            cases=len(overlap.common) + left,
            left_out=left,
            left_out_examples=examples,
        )
        for r, left, examples in zip(loaded, overlap.left_out, overlap.examples, strict=True)
    )
    return Comparison(
        runs=infos,
        baseline=None if base_i is None else loaded[base_i].label,
        all_pairs=base_i is None,
        metrics=tuple(spec.label for spec, _, _ in rows),
        rows=tuple(
            MetricRow(
                metric=spec.label,
                name=spec.name,
                modes=spec.modes,
                means=means,
                tests=tuple(PairTest(**t) for t in tests),
            )
            for spec, means, tests in rows
        ),
        cases=len(overlap.common),
        min_overlap=min_overlap,
        resamples=resamples,
        seed=seed,
        alpha=alpha,
        confidence=confidence,
        comparisons=len(tested),
        different_data=different_data,
    )
