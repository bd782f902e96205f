"""What is paired with what: which query mode of each run a metric is read under, and which
cases every run has.

Cases pair on (unit_id, case_id). By default each run is read under its primary query mode
(the one behind its headline metrics), so a BM25 run pairs with a fusion run's `fusion`
mode. A requested metric is one of:

- `ndcg@10` (mode-free): each run under its primary mode;
- `bm25.ndcg@10`: every run under the mode `bm25`;
- `bm25.ndcg@10:fusion.ndcg@10:…`: one entry per run, in the runs' order (a bare
  `ndcg@10` entry means that run's primary mode).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from heta_eval.compare.loading import CompareError, LoadedRun
from heta_eval.records import EvaluationReport
from heta_eval.tracking.naming import metric_name

PER_RUN_SEPARATOR = ":"
CaseKey = tuple[str, str]  # (unit_id, case_id)
Keys = Sequence[list[tuple[str, str]]]  # each run's (query_mode, metric) pairs
MAX_EXAMPLES = 3


@dataclass(frozen=True)
class MetricSpec:
    """One compared metric: its name, the query mode it is read under in each run (in the
    runs' order), and how it is shown."""

    name: str
    modes: tuple[str, ...]
    label: str


def metric_keys(report: EvaluationReport) -> list[tuple[str, str]]:
    """(query_mode, metric) pairs of a report, in its summary's order."""
    keys: dict[tuple[str, str], None] = {}
    for key in report.score_details:
        mode = next((m for m in report.query_modes if key.startswith(f"{m}.")), None)
        mode, name = (mode, key[len(mode) + 1 :]) if mode else key.partition(".")[::2]
        keys[(mode, name)] = None
    for result in report.case_results:
        for score in result.scores:
            keys.setdefault((result.query_mode, score.name), None)
    return list(keys)


def primary_modes(runs: Sequence[LoadedRun]) -> list[str]:
    """Each run's primary query mode; a run that evaluated no mode is refused."""
    modes = []
    for run in runs:
        mode = run.report.primary_query_mode
        if mode is None:
            raise CompareError(f"run {run.label!r} evaluated no query mode")
        modes.append(mode)
    return modes


def _matches(wanted: str, name: str) -> bool:
    return wanted in (name, metric_name(name))


def _label(name: str, modes: Sequence[str], primary: Sequence[str]) -> str:
    """`mode.metric` when every run uses one mode, the bare name when each run uses its own
    primary mode, else one `mode.metric` per run."""
    if len(set(modes)) == 1:
        return f"{modes[0]}.{name}"
    if list(modes) == list(primary):
        return name
    return PER_RUN_SEPARATOR.join(f"{m}.{name}" for m in modes)


def _available(run: LoadedRun, keys: list[tuple[str, str]]) -> str:
    return ", ".join(f"{m}.{n}" for m, n in keys) or "none"


def _one_run(
    wanted: str, run: LoadedRun, keys: list[tuple[str, str]], primary: str
) -> tuple[str, str] | None:
    """(mode, metric) that `wanted` names in one run: a bare name under its primary mode,
    else `mode.metric`; None when the run has no such metric."""
    for mode, name in keys:
        if mode == primary and _matches(wanted, name):
            return mode, name
    for mode, name in keys:
        if _matches(wanted, f"{mode}.{name}"):
            return mode, name
    return None


def _per_run(
    entry: str, runs: Sequence[LoadedRun], keys: Keys, primary: Sequence[str]
) -> MetricSpec:
    parts = [p.strip() for p in entry.split(PER_RUN_SEPARATOR)]
    if len(parts) != len(runs):
        raise CompareError(
            f"metric {entry!r} names {len(parts)} run(s) but {len(runs)} are compared "
            f"({', '.join(repr(r.label) for r in runs)}); give one entry per run, in order"
        )
    found = []
    for part, run, run_keys, mode in zip(parts, runs, keys, primary, strict=True):
        hit = _one_run(part, run, run_keys, mode)
        if hit is None:
            raise CompareError(
                f"run {run.label!r} has no metric {part!r} (it has {_available(run, run_keys)})"
            )
        found.append(hit)
    names = {name for _, name in found}
    if len(names) > 1:
        raise CompareError(
            f"metric {entry!r} pairs different metrics ({', '.join(sorted(names))}); "
            "name the same metric in every run, under the query mode you want"
        )
    modes = tuple(mode for mode, _ in found)
    return MetricSpec(found[0][1], modes, _label(found[0][1], modes, primary))


def _shared(
    entry: str, runs: Sequence[LoadedRun], keys: Keys, primary: Sequence[str]
) -> MetricSpec:
    bare = [_one_run(entry, r, k, m) for r, k, m in zip(runs, keys, primary, strict=True)]
    if all(hit is not None and hit[0] == m for hit, m in zip(bare, primary, strict=True)):
        name = bare[0][1]  # type: ignore[index]
        if all(hit[1] == name for hit in bare):  # type: ignore[index]
            return MetricSpec(name, tuple(primary), _label(name, primary, primary))
    for mode, name in dict.fromkeys(k for run_keys in keys for k in run_keys):
        if not _matches(entry, f"{mode}.{name}"):
            continue
        missing = [r for r, k in zip(runs, keys, strict=True) if (mode, name) not in k]
        if missing:
            run = missing[0]
            modes = ", ".join(run.report.query_modes)
            raise CompareError(
                f"run {run.label!r} has no {mode}.{name} (its query modes: {modes}); name a "
                f"mode per run, e.g. --metrics "
                + PER_RUN_SEPARATOR.join(f"{m}.{name}" for m in primary)
            )
        modes = tuple(mode for _ in runs)
        return MetricSpec(name, modes, _label(name, modes, primary))
    shared = ", ".join(s.name for s in default_metrics(runs, keys, primary, strict=False))
    raise CompareError(
        f"unknown metric {entry!r} (metrics every run has under its primary query mode: "
        f"{shared or 'none'}; another mode is named as mode.metric, e.g. bm25.ndcg@10)"
    )


def default_metrics(
    runs: Sequence[LoadedRun], keys: Keys, primary: Sequence[str], strict: bool = True
) -> list[MetricSpec]:
    """Every metric all runs have under their primary modes, in the first run's order."""
    per_run = [{n for m, n in k if m == mode} for k, mode in zip(keys, primary, strict=True)]
    names = [n for m, n in keys[0] if m == primary[0] and all(n in s for s in per_run)]
    if not names and strict:
        have = "; ".join(
            f"{r.label!r}: {', '.join(sorted(s)) or 'none'} ({mode})"
            for r, s, mode in zip(runs, per_run, primary, strict=True)
        )
        raise CompareError(f"the runs share no metric under their primary query modes ({have})")
    return [MetricSpec(n, tuple(primary), _label(n, primary, primary)) for n in names]


def select_metrics(runs: Sequence[LoadedRun], requested: Iterable[str] | None) -> list[MetricSpec]:
    """The compared metrics (see the module docstring), without repeats."""
    keys = [metric_keys(r.report) for r in runs]
    primary = primary_modes(runs)
    if requested is None:
        return default_metrics(runs, keys, primary)
    chosen: list[MetricSpec] = []
    for entry in requested:
        if PER_RUN_SEPARATOR in entry:
            spec = _per_run(entry, runs, keys, primary)
        else:
            spec = _shared(entry, runs, keys, primary)
        if all((spec.name, spec.modes) != (c.name, c.modes) for c in chosen):
            chosen.append(spec)
    return chosen


@dataclass(frozen=True)
class CaseOverlap:
    """The cases every run has, and per run how many (with examples) it has alone."""

    common: tuple[CaseKey, ...]
    left_out: tuple[int, ...]
    examples: tuple[tuple[str, ...], ...]


def show_case(key: CaseKey) -> str:
    return "/".join(key)


def case_overlap(runs: Sequence[LoadedRun], min_overlap: float) -> CaseOverlap:
    """Pair on the cases every run has; refuse when, for some run, the shared cases are
    fewer than `min_overlap` of its own (or none at all)."""
    sets = [{(r.unit_id, r.case_id) for r in run.report.case_results} for run in runs]
    common = set.intersection(*sets)
    left = [sorted(s - common) for s in sets]
    for run, cases, only in zip(runs, sets, left, strict=True):
        share = len(common) / len(cases) if cases else 0.0
        if not common or share < min_overlap:
            examples = ", ".join(show_case(k) for k in only[:MAX_EXAMPLES])
            raise CompareError(
                f"only {len(common)} of the {len(cases)} cases of run {run.label!r} are in every "
                f"compared run ({share:.0%}, below --min-overlap {min_overlap:g}); "
                f"{len(only)} would be left out (e.g. {examples}) — compare runs of the same "
                "benchmark, split and limit, or lower --min-overlap to compare on the "
                f"{len(common)} shared cases"
                if common
                else f"run {run.label!r} shares no case with the other runs "
                f"(e.g. {examples}) — compare runs of the same benchmark and split"
            )
    return CaseOverlap(
        common=tuple(sorted(common)),
        left_out=tuple(len(x) for x in left),
        examples=tuple(tuple(show_case(k) for k in x[:MAX_EXAMPLES]) for x in left),
    )
