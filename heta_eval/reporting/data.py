"""What a run report shows, computed from an EvaluationReport (no HTML, no plotting)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from heta_eval.records import EvaluationCaseResult, EvaluationReport, KnowledgeBaseManifest
from heta_eval.records.latency import ModeLatencies, mode_latencies

WORST_CASES = 20  # rows of each worst-cases table, whatever the number of cases


def metric_names(report: EvaluationReport) -> list[str]:
    """The run's metrics in evaluator order (from the case scores when not recorded)."""
    names = [str(n) for n in report.run.evaluators]
    if names:
        return names
    seen: dict[str, None] = {}
    for result in report.case_results:
        for score in result.scores:
            seen.setdefault(score.name, None)
    return list(seen)


def ordered_modes(report: EvaluationReport) -> list[str]:
    """The evaluated query modes, the primary one first."""
    primary = report.primary_query_mode
    return sorted(report.query_modes, key=lambda m: m != primary)


def metric_values(report: EvaluationReport, mode: str, metric: str) -> list[float]:
    """Every numeric value of `metric` under `mode` (skipped and undetermined left out)."""
    values = []
    for result in report.case_results:
        if result.query_mode == mode:
            value = result.score(metric)
            if value is not None:
                values.append(value)
    return values


def latencies(report: EvaluationReport, mode: str) -> ModeLatencies:
    """Query latencies (seconds) of the mode's case results, split into those measured
    alone (sorted) and batch means (`runner.query_batch_size`)."""
    return mode_latencies(report.case_results, mode)


@dataclass(frozen=True)
class LatencyStats:
    """Summary of one mode's query latencies measured one query at a time, in seconds."""

    count: int
    mean: float
    p50: float
    p95: float
    max: float


def latency_stats(values: Sequence[float]) -> LatencyStats | None:
    """Count, mean, median, 95th percentile and maximum of sorted latencies (None if empty)."""
    if not values:
        return None
    if len(values) == 1:
        p50 = p95 = values[0]
    else:
        cuts = statistics.quantiles(values, n=100, method="inclusive")
        p50, p95 = cuts[49], cuts[94]
    return LatencyStats(len(values), statistics.fmean(values), p50, p95, max(values))


def worst_cases(
    report: EvaluationReport, mode: str, metric: str, limit: int = WORST_CASES
) -> list[tuple[float, EvaluationCaseResult]]:
    """The `limit` lowest-scoring results of `metric` under `mode` (ties by unit and case id),
    among those below the best value any case reached (cases at the top are not failures)."""
    scored = []
    for result in report.case_results:
        if result.query_mode == mode:
            value = result.score(metric)
            if value is not None:
                scored.append((value, result))
    if not scored:
        return []
    best = max(value for value, _ in scored)
    below = [item for item in scored if item[0] < best]
    below.sort(key=lambda item: (item[0], item[1].unit_id, item[1].case_id))
    return below[:limit]


@dataclass(frozen=True)
class SliceRow:
    """One slice (`label=value`): how many cases it has and its means per `mode.metric`."""

    label: str
    value: str
    cases: int
    means: dict[str, float]


def slice_rows(report: EvaluationReport) -> list[SliceRow]:
    """The report's per-slice summaries with case counts, sorted by label then value."""
    counts: Counter[tuple[str, str]] = Counter()
    first_mode = report.query_modes[0] if report.query_modes else None
    for result in report.case_results:
        if result.query_mode == first_mode:
            for label, value in result.labels.items():
                counts[(label, value)] += 1
    rows = []
    for key, means in report.score_slices.items():
        label, _, value = key.partition("=")
        rows.append(SliceRow(label, value, counts.get((label, value), 0), dict(means)))
    return sorted(rows, key=lambda row: (row.label, row.value))


def expected_references(result: EvaluationCaseResult) -> set[str]:
    """Document ids the case's evidence names (to mark relevant retrieved items)."""
    found: set[str] = set()
    if result.expected is None:
        return found
    for item in result.expected.evidence:
        if item.reference_id:
            found.add(item.reference_id)
        document = item.locator.get("document_id")
        if isinstance(document, str):
            found.add(document)
    return found


def error_counts(report: EvaluationReport) -> list[tuple[str, str, int]]:
    """(stage, error type, count) of failed case results, most frequent first."""
    counts = Counter(
        (r.error.stage, r.error.error_type) for r in report.case_results if r.error is not None
    )
    return [(stage, kind, n) for (stage, kind), n in counts.most_common()]


def knowledge_base_counts(manifests: Sequence[KnowledgeBaseManifest]) -> str:
    """What happened to the knowledge bases: `1 built in 3.10 s, 2 loaded from the build cache
    in 0.04 s` (a cached one was not built by this run: its load time, not its build time)."""
    loaded = [kb for kb in manifests if kb.cache_status == "hit"]
    built = [kb for kb in manifests if kb.cache_status != "hit"]
    parts = []
    if built or not manifests:
        parts.append(f"{len(built)} built in {sum(kb.build_seconds for kb in built):.2f} s")
    if loaded:
        seconds = sum(kb.load_seconds or 0.0 for kb in loaded)
        parts.append(f"{len(loaded)} loaded from the build cache in {seconds:.2f} s")
    return ", ".join(parts)
