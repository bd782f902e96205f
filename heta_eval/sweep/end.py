"""The end of a sweep: its summary logged to the parent run, its jobs' table printed.

`summarise_sweep` reads the parent's child runs and the job records of the sweep directory
(`sweep_summary`), logs `sweep_summary.json` and `sweep_best.json`, the `best/<score>`
metrics with their runs' CI bounds, the headline tags and the parent's description, and
prints the jobs' table with the command that compares them (`sweep_report`).
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from heta_eval.results.suite_render import (
    SUITE_FILES,
    main_rows,
    print_suite_table,
    title,
    to_texts,
)
from heta_eval.results.suite_table import build_suite_table
from heta_eval.results.sweep_rows import (
    SweepRow,
    best_scores,
    best_table,
    differing_overrides,
    headline,
    job_rows,
    merge_job_records,
    read_job_records,
    summary_table,
)
from heta_eval.sweep.report import (
    SWEEP_NOTE_START,
    compare_command,
    print_sweep_end,
    sweep_note,
)
from heta_eval.tracking.mlflow_tracker import default_tracking_uri
from heta_eval.tracking.projection import headline_section
from heta_eval.tracking.run_context import NOTE_TAG
from heta_eval.tracking.ui_links import open_command, runs_table_url, ui_base

__all__ = ["SweepRow", "child_runs", "summarise_sweep"]

log = logging.getLogger(__name__)

SUMMARY_TABLE = "sweep_summary.json"
BEST_TABLE = "sweep_best.json"
BEST_RUN_TAG = "heta_eval.best_run_id"  # the best job's run on the sweep's headline score
HEADLINE_METRIC_TAG = "heta_eval.headline_metric"
PARENT_TAG = "mlflow.parentRunId"
# Sweeper outputs logged to the parent when present (Optuna's best trial, the sweep config).
SWEEP_FILES = ("optimization_results.yaml", "multirun.yaml")
FIXED_TAGS = ("benchmark.name", "recipe.name")  # tagged on the parent when one value for all
TAGS_PER_BATCH = 100  # MLflow's per-request limits
METRICS_PER_BATCH = 1000
MAX_NOTE = 7500  # MLflow's tag values hold 8,000 characters


def summarise_sweep(
    tracker: Any,
    sweep_dir: Path,
    optimized_metric: str | None,
    suite: Any = None,
    quiet: bool = False,
) -> list[SweepRow]:
    """Log the summary tables, best/* metrics and tags to the parent run `tracker.run_id`,
    print the jobs' table; return the rows (one per job). A suite's sweep (`suite`, a
    `records.suite.SuiteDefinition`) also logs and prints its members x recipes table."""
    from mlflow.entities import Metric, RunTag

    client, run_id = tracker.client, tracker.run_id
    parent = client.get_run(run_id)
    rows = job_rows(child_runs(client, parent.info.experiment_id, run_id))
    merge_job_records(rows, read_job_records(sweep_dir))

    metric = headline(rows, optimized_metric)
    log_table(client, run_id, SUMMARY_TABLE, summary_table(rows, metric))
    best = best_scores(rows)
    if best:
        log_table(client, run_id, BEST_TABLE, best_table(best))
    stamp = int(time.time() * 1000)
    metrics = []
    for score in best:
        metrics.append(Metric(f"best/{score.metric}", score.value, stamp, 0))
        for stat in ("ci_low", "ci_high"):
            bound = getattr(score, stat)
            if bound is not None:
                metrics.append(Metric(f"best/{score.metric}.{stat}", bound, stamp, 0))
    top = next((b for b in best if b.metric == metric), None)
    if top is not None:
        # The parent's own headline cell (`ndcg_at_10`) in the runs table: the best job's.
        metrics.append(Metric(top.metric, top.value, stamp, 0))
        values = {top.metric: top.value}
        for stat in ("ci_low", "ci_high"):
            bound = getattr(top, stat)
            if bound is not None:
                metrics.append(Metric(f"{top.metric}.{stat}", bound, stamp, 0))
                values[f"{top.metric}.{stat}"] = bound
        # The Headline chart group, first in MLflow's chart view, as each job has it.

        for name, value, step in headline_section(top.metric, values):
            metrics.append(Metric(name, value, stamp, step))
    metrics.append(Metric("sweep.jobs_finished", sum(r.ok for r in rows), stamp, 0))
    metrics.append(Metric("sweep.jobs_failed", sum(not r.ok for r in rows), stamp, 0))
    for i in range(0, len(metrics), METRICS_PER_BATCH):
        client.log_batch(run_id, metrics=metrics[i : i + METRICS_PER_BATCH])
    tags = {HEADLINE_METRIC_TAG: metric or ""}
    if top is not None:
        tags[BEST_RUN_TAG] = top.row.run_id
    note = parent.data.tags.get(NOTE_TAG, "")
    table = None
    if suite is not None:
        try:
            table = log_suite_table(client, run_id, rows, suite)
        except Exception as exc:  # the jobs' summary stands without the suite's table
            log.warning("could not build the suite table of sweep %s: %s", run_id, exc)
    if not note or note.startswith(SWEEP_NOTE_START):  # never a description a user wrote
        tags[NOTE_TAG] = sweep_note(rows, top)
        if table is not None:
            with_table = suite_note(table, tags[NOTE_TAG])
            # MLflow refuses a tag value past 8,000 characters (and the whole batch with it).
            if len(with_table) <= MAX_NOTE:
                tags[NOTE_TAG] = with_table
    finished = [r for r in rows if r.ok]
    for key in FIXED_TAGS:
        values = {r.tags.get(key) for r in finished}
        if len(values) == 1 and None not in values:
            tags[key] = values.pop()  # type: ignore[assignment]
    items = [RunTag(k, str(v)) for k, v in tags.items()]
    for i in range(0, len(items), TAGS_PER_BATCH):
        client.log_batch(run_id, tags=items[i : i + TAGS_PER_BATCH])
    for name in SWEEP_FILES:
        if (sweep_dir / name).is_file():
            client.log_artifact(run_id, str(sweep_dir / name))
    log.info(
        "sweep %s: %d job(s) finished, %d failed", run_id, len(finished), len(rows) - len(finished)
    )
    if quiet:  # a replay (heta-eval-sync): nothing printed
        return rows
    try:
        default = default_tracking_uri(Path.cwd() / "outputs")
        print_sweep_end(rows, metric, run_id, compare_command(run_id, tracker.uri, default))
        if table is not None:
            print_suite_table(table)
        print_ui_links(tracker.uri, parent.info.experiment_id, metric)
    except Exception as exc:  # the summary is logged; a console problem must not undo it
        log.warning("could not print the sweep's table: %s", exc)
    return rows


def log_suite_table(client: Any, run_id: str, rows: list[SweepRow], suite: Any) -> Any:
    """Build the suite's table and log it to the parent run as suite_table.md, .html (MLflow's
    artifact view renders it) and .json."""

    varied = [k for k in differing_overrides(rows) if k != suite.member_key]
    table = build_suite_table(rows, suite, client, varied=varied)
    with tempfile.TemporaryDirectory() as tmp:
        for kind, text in to_texts(table).items():
            path = Path(tmp) / SUITE_FILES[kind]
            path.write_text(text, encoding="utf-8")
            client.log_artifact(run_id, str(path))
    return table


def suite_note(table: Any, note: str) -> str:
    """The parent's description with the suite's main table (Markdown) before it."""

    header, body = main_rows(table)
    lines = [f"**{title(table)}**", ""]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |")
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    lines += ["", "References and the full table: `suite_table.html` (Artifacts).", "", note]
    return "\n".join(lines)


def print_ui_links(uri: str, experiment_id: str, metric: str | None) -> None:
    """Where to look at the sweep in the MLflow UI: the command that serves it (a local
    store) and the runs table, best job first."""

    command = open_command(uri)
    if command:
        print(f"MLflow UI: {command}", flush=True)
    print(f"runs table: {runs_table_url(ui_base(uri), experiment_id, metric)}", flush=True)


def child_runs(client: Any, experiment_id: str, run_id: str) -> list[Any]:
    """Every run whose parent is `run_id` (all pages)."""
    runs: list[Any] = []
    token = None
    while True:
        page = client.search_runs(
            [experiment_id], filter_string=f"tags.`{PARENT_TAG}` = '{run_id}'", page_token=token
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def log_table(client: Any, run_id: str, name: str, columns: dict[str, list[Any]]) -> None:
    """Log (or, on a resumed parent, replace) the table artifact `name`."""
    if not any(a.path == name for a in client.list_artifacts(run_id)):
        client.log_table(run_id, data=columns, artifact_file=name)
        return
    # log_table appends to an existing table; a rerun's summary replaces the old one.
    import pandas as pd

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        pd.DataFrame(columns).to_json(path, orient="split", index=False, date_format="iso")
        client.log_artifact(run_id, str(path))
