"""The summary of a sweep's jobs: one row per job, the best value of every metric.

Rows come from the parent's child runs (`job_rows`: a rerun job's latest FINISHED run) and
from the per-job records the sweep callback leaves for jobs that failed before their run
existed (`merge_job_records`). `summary_table` is `sweep_summary.json`; `best_metrics` gives
`best/<metric>` (smallest for durations, latencies and failure counts, largest otherwise).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JOBS_DIR = ".heta_eval_jobs"  # per-job records in the sweep directory
OVERRIDES_TAG = "heta_eval.overrides"  # set on each child run by the CLI

# Counts of cases a metric could not score: fewer is better.
_LOWER_IS_BETTER_STATS = ("failed", "undetermined")


def lower_is_better(metric: str) -> bool:
    """Durations, latencies and failure counts are best when smallest, the rest when largest.

    `kb.build_seconds`, `kb.build_seconds_total`, `bm25.latency_p95_seconds`, `cases.failed`,
    `bm25.ndcg_at_10.failed` are minimised; scores, their CIs and other counts maximised.
    """
    last = metric.rsplit(".", 1)[-1]
    return "_seconds" in metric or "latency" in metric or last in _LOWER_IS_BETTER_STATS


@dataclass
class SweepRow:
    """One job of the sweep: its (latest) child run, or a job that failed before its run."""

    run_id: str
    run_name: str
    status: str
    overrides: str
    start_time: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.status == "FINISHED"


def _job_key(run: Any) -> str:
    return run.data.tags.get(OVERRIDES_TAG) or run.info.run_id


def job_rows(runs: Sequence[Any]) -> list[SweepRow]:
    """One row per job: its latest FINISHED run, or its latest run if none finished.

    A rerun adds runs under the same parent; a job that failed the first time and finished
    the second is one FINISHED job.
    """
    by_job: dict[str, list[Any]] = {}
    for run in sorted(runs, key=lambda r: r.info.start_time or 0):
        by_job.setdefault(_job_key(run), []).append(run)
    rows = []
    for attempts in by_job.values():
        finished = [r for r in attempts if r.info.status == "FINISHED"]
        run = (finished or attempts)[-1]
        rows.append(
            SweepRow(
                run_id=run.info.run_id,
                run_name=run.info.run_name or "",
                status=run.info.status,
                overrides=run.data.tags.get(OVERRIDES_TAG, ""),
                start_time=run.info.start_time or 0,
                metrics=dict(run.data.metrics),
                tags=dict(run.data.tags),
                attempts=len(attempts),
            )
        )
    return sorted(rows, key=lambda r: (r.start_time, r.run_name))


def read_job_records(sweep_dir: Path) -> list[dict[str, Any]]:
    """The records `on_job_end` left in the sweep directory (unreadable ones skipped)."""
    records = []
    for path in sorted((sweep_dir / JOBS_DIR).glob("*.json")):
        try:
            records.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return records


def merge_job_records(rows: list[SweepRow], records: Sequence[Mapping[str, Any]]) -> None:
    """Add the errors of failed jobs to their rows, and rows for failed jobs without a run."""
    by_overrides = {row.overrides: row for row in rows if row.overrides}
    for record in records:
        if record.get("status") != "FAILED":
            continue
        overrides = " ".join(record.get("overrides") or [])
        row = by_overrides.get(overrides)
        if row is None:
            row = SweepRow(
                run_id="",
                run_name=f"job {record.get('num', '?')} (no run)",
                status="FAILED",
                overrides=overrides,
                attempts=0,
            )
            rows.append(row)
            by_overrides[overrides] = row
        if not row.ok:
            row.error = record.get("error")


def summary_table(rows: Sequence[SweepRow]) -> dict[str, list[Any]]:
    """Columns of `sweep_summary.json`: one row per job, every metric a column."""
    metrics = sorted({m for row in rows for m in row.metrics})
    columns: dict[str, list[Any]] = {
        "run_name": [r.run_name for r in rows],
        "status": [r.status for r in rows],
        "overrides": [r.overrides for r in rows],
        "run_id": [r.run_id for r in rows],
        "attempts": [r.attempts for r in rows],
        "error": [r.error for r in rows],
    }
    for m in metrics:
        columns[m] = [r.metrics.get(m) for r in rows]
    return columns


def best_metrics(rows: Sequence[SweepRow]) -> dict[str, tuple[float, str]]:
    """`metric -> (best value, run id)` over the finished jobs (min for durations, else max)."""
    best: dict[str, tuple[float, str]] = {}
    for row in rows:
        if not row.ok:
            continue
        for name, value in row.metrics.items():
            if value != value:  # NaN never wins
                continue
            current = best.get(name)
            better = current is None or (
                value < current[0] if lower_is_better(name) else value > current[0]
            )
            if better:
                best[name] = (value, row.run_id)
    return best
