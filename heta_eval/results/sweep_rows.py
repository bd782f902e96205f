"""The summary of a sweep's jobs: one row per job, and the best run of every score.

Rows come from the parent's child runs (`job_rows`: a rerun job's latest FINISHED run) and
from the per-job records the sweep callback leaves in the sweep directory (`merge_job_records`:
job numbers, and jobs that failed before their run existed). `summary_table` is
`sweep_summary.json`; `best_scores` gives `best/<score>` with its run's CI bounds and
`sweep_best.json`. Table column names are ones MLflow's table viewer shows (no dots).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heta_eval.tracking.naming import (
    HEADLINE_TAG,
    PREFERRED_HEADLINE,
    PRIMARY_MODE_TAG,
    metric_name,
    viewer_columns,
)

JOBS_DIR = ".heta_eval_jobs"  # per-job records in the sweep directory
OVERRIDES_TAG = "heta_eval.overrides"  # set on each child run by the CLI
JOB_TAG = "heta_eval.sweep_job"  # Hydra's job number, set on each child run
# Statistics logged beside each score mean (`<score>.<stat>`).
SCORE_STATS = ("std", "ci_low", "ci_high", "scored", "skipped", "undetermined", "failed")


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
    job: int | None = None  # Hydra's job number, from the job records

    @property
    def label(self) -> str:
        """`#2` for job 2, else the run name."""
        return f"#{self.job}" if self.job is not None else self.run_name

    @property
    def ok(self) -> bool:
        return self.status == "FINISHED"


def _job_key(run: Any) -> str:
    return run.data.tags.get(OVERRIDES_TAG) or run.info.run_id


def _job_number(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


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
                job=_job_number(run.data.tags.get(JOB_TAG)),
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


def write_job_record(sweep_dir: Path, record: Mapping[str, Any]) -> None:
    """Leave a job's record (`num`, `status`, `overrides`, `error`) in the sweep directory,
    atomically (`read_job_records` reads it)."""
    import os

    jobs = sweep_dir / JOBS_DIR
    jobs.mkdir(exist_ok=True)
    tmp = jobs / f".{record['num']}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(dict(record)), encoding="utf-8")
    os.replace(tmp, jobs / f"{record['num']}.json")


def merge_job_records(rows: list[SweepRow], records: Sequence[Mapping[str, Any]]) -> None:
    """Number the rows by their jobs, add the errors of failed jobs to their rows, and add
    rows for failed jobs without a run."""
    by_overrides = {row.overrides: row for row in rows if row.overrides}
    for record in records:
        overrides = " ".join(record.get("overrides") or [])
        row = by_overrides.get(overrides)
        num = record.get("num")
        if row is not None and isinstance(num, int):
            row.job = num
        if record.get("status") != "FAILED":
            continue
        if row is None:
            row = SweepRow(
                run_id="",
                run_name=f"job {record.get('num', '?')} (no run)",
                status="FAILED",
                overrides=overrides,
                attempts=0,
                job=num if isinstance(num, int) else None,
            )
            rows.append(row)
            by_overrides[overrides] = row
        if not row.ok:
            row.error = record.get("error")
    rows.sort(key=lambda r: (r.job is None, r.job or 0, r.start_time, r.run_name))


def split_overrides(text: str) -> dict[str, str]:
    """`recipe=bm25 recipe.chunk_size=64` as {key: value} (quoted values kept whole)."""
    try:
        parts = shlex.split(text)
    except ValueError:
        parts = text.split()
    return {key.lstrip("+~"): value for key, _, value in (p.partition("=") for p in parts) if key}


def differing_overrides(rows: Sequence[SweepRow]) -> list[str]:
    """The override keys whose values differ between the jobs (all of them for one job)."""
    parsed = [split_overrides(r.overrides) for r in rows]
    keys = list(dict.fromkeys(k for p in parsed for k in p))
    if len(rows) < 2:
        return keys
    return [k for k in keys if len({p.get(k) for p in parsed}) > 1]


def score_means(row: SweepRow) -> list[str]:
    """The row's metrics that are score means: `bm25.ndcg_at_10` (it has `.scored` and the
    other statistics beside it) and the mode-free `ndcg_at_10` of its primary query mode. Not
    statistics, counts, cache counters, durations, latencies or slices."""
    mode = row.tags.get(PRIMARY_MODE_TAG)
    means = []
    for name in row.metrics:
        if name.rsplit(".", 1)[-1] in SCORE_STATS or "/" in name:
            continue
        if f"{name}.scored" in row.metrics or (mode and f"{mode}.{name}.scored" in row.metrics):
            means.append(name)
    return sorted(means, key=lambda m: ("." in m, m))


def headline(rows: Sequence[SweepRow], optimized_metric: str | None = None) -> str | None:
    """The score a sweep is judged by: `optimized_metric` when set, else the jobs' headline
    (`heta_eval.headline_metric`, nDCG@10 where scored), else their first mode-free score."""
    finished = [r for r in rows if r.ok]
    if optimized_metric:
        return metric_name(optimized_metric)
    tagged = [r.tags[HEADLINE_TAG] for r in finished if r.tags.get(HEADLINE_TAG)]
    if tagged:
        return max(set(tagged), key=tagged.count)
    means = [m for r in finished for m in score_means(r) if "." not in m]
    preferred = metric_name(PREFERRED_HEADLINE)
    return preferred if preferred in means else (means[0] if means else None)


def summary_table(rows: Sequence[SweepRow], metric: str | None = None) -> dict[str, list[Any]]:
    """Columns of `sweep_summary.json`: one row per job: its number, the overrides that
    differ (each its own column), the headline `metric` with its CI, status and run, then
    every metric, score means first (what MLflow's viewer shows first is what tells the jobs
    apart)."""
    keys = differing_overrides(rows)
    parsed = [split_overrides(r.overrides) for r in rows]
    means = {m for r in rows for m in score_means(r)}
    metrics = sorted({m for r in rows for m in r.metrics}, key=lambda m: (m not in means, m))
    headline = [metric, f"{metric}.ci_low", f"{metric}.ci_high"] if metric else []
    columns: dict[str, list[Any]] = {
        "job": [r.job for r in rows],
        **{key: [p.get(key) for p in parsed] for key in keys},
        **{m: [r.metrics.get(m) for r in rows] for m in headline},
        "status": [r.status for r in rows],
        "run_name": [r.run_name for r in rows],
        "overrides": [r.overrides for r in rows],
        "run_id": [r.run_id for r in rows],
        "attempts": [r.attempts for r in rows],
        "error": [r.error for r in rows],
    }
    for m in metrics:
        columns.setdefault(m, [r.metrics.get(m) for r in rows])
    return viewer_columns(columns)


@dataclass(frozen=True)
class BestScore:
    """The best value of one score mean over a sweep's finished jobs, with that run's CI."""

    metric: str
    value: float
    ci_low: float | None
    ci_high: float | None
    row: SweepRow


def best_scores(rows: Sequence[SweepRow]) -> list[BestScore]:
    """Per score mean (`score_means`), the finished job with the highest value (the earliest
    job on a tie) and its CI bounds; every score is higher-is-better. Not CI bounds or other
    statistics on their own: a best mean carries its own run's bounds."""
    best: dict[str, BestScore] = {}
    for row in rows:
        if not row.ok:
            continue
        for name in score_means(row):
            value = row.metrics[name]
            if value != value:  # NaN never wins
                continue
            current = best.get(name)
            if current is None or value > current.value:
                best[name] = BestScore(
                    name,
                    value,
                    row.metrics.get(f"{name}.ci_low"),
                    row.metrics.get(f"{name}.ci_high"),
                    row,
                )
    return [best[m] for m in sorted(best, key=lambda m: ("." in m, m))]


def best_table(best: Sequence[BestScore]) -> dict[str, list[Any]]:
    """Columns of `sweep_best.json`: one row per score, the best value with its CI and the
    job that reached it."""
    return viewer_columns(
        {
            "metric": [b.metric for b in best],
            "best": [b.value for b in best],
            "ci_low": [b.ci_low for b in best],
            "ci_high": [b.ci_high for b in best],
            "job": [b.row.job for b in best],
            "overrides": [b.row.overrides for b in best],
            "run_name": [b.row.run_name for b in best],
            "run_id": [b.row.run_id for b in best],
        }
    )
