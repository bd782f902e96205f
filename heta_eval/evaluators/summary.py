"""Aggregate per-case scores into the report's score summary."""

from __future__ import annotations

import math
from collections.abc import Sequence

from heta_eval.evaluators.statistics import bootstrap_ci, sample_std
from heta_eval.records import EvaluationCaseResult, ScoreAggregate


def summary_key(query_mode: str, metric: str) -> str:
    """Key of a metric in `EvaluationReport.score_summary`: `"{query_mode}.{metric}"`."""
    return f"{query_mode}.{metric}"


def summarize(
    results: Sequence[EvaluationCaseResult],
    query_modes: Sequence[str],
    metrics: Sequence[str],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[dict[str, float], dict[str, ScoreAggregate]]:
    """Mean of each metric over the cases it scored, per query mode, with its statistics.

    Skipped, undetermined and failed cases are counted, never averaged in; `scored` is
    how many cases the metric could discriminate, `skipped_reasons` why the others were
    skipped (a metric that cannot fail on a case skips it with its reason). The details add
    the sample standard deviation and a seeded percentile-bootstrap confidence interval
    (`resamples` resamples at `confidence`). A metric that scored no case has no entry in
    the summary, only in the details.
    """
    summary: dict[str, float] = {}
    details: dict[str, ScoreAggregate] = {}
    for mode in query_modes:
        mode_results = [r for r in results if r.query_mode == mode]
        for metric in metrics:
            values: list[float] = []
            skipped = undetermined = failed = 0
            reasons: dict[str, int] = {}
            for result in mode_results:
                score = next((s for s in result.scores if s.name == metric), None)
                if score is None:
                    failed += 1
                elif score.undetermined:
                    undetermined += 1
                elif score.value is None:
                    skipped += 1
                    why = score.skipped_reason or "no reason given"
                    reasons[why] = reasons.get(why, 0) + 1
                else:
                    values.append(score.value)
            key = summary_key(mode, metric)
            mean = math.fsum(values) / len(values) if values else None
            if mean is not None:
                summary[key] = mean
            interval = bootstrap_ci(values, resamples, confidence, seed) if values else None
            details[key] = ScoreAggregate(
                mean=mean,
                std=sample_std(values),
                ci_low=interval[0] if interval else None,
                ci_high=interval[1] if interval else None,
                confidence=confidence,
                scored=len(values),
                skipped=skipped,
                undetermined=undetermined,
                failed=failed,
                skipped_reasons=dict(sorted(reasons.items(), key=lambda r: (-r[1], r[0]))),
            )
    return summary, details


def summarize_slices(
    results: Sequence[EvaluationCaseResult],
    query_modes: Sequence[str],
    metrics: Sequence[str],
) -> dict[str, dict[str, float]]:
    """Score summaries per slice label value, keyed `"{label}={value}"`, sorted by key."""
    groups: dict[str, list[EvaluationCaseResult]] = {}
    for result in results:
        for label, value in result.labels.items():
            groups.setdefault(f"{label}={value}", []).append(result)
    return {
        key: summarize(groups[key], query_modes, metrics, resamples=1)[0] for key in sorted(groups)
    }
