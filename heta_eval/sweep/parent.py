"""The MLflow calls of a sweep's parent run, made in the launching process: create it or
resume this sweep's unfinished one (`open_parent`), log its params (never changed once
logged) and tags, end the runs a killed local job left RUNNING, summarise the sweep into it
and end it (`close_parent`).

Like a run's, the parent's record is its directory's `tracking.json` (the sweep directory):
written before MLflow is asked, marked synced once MLflow holds the summary, so that
`heta-eval-sync` can replay a sweep whose tracking failed, or bring it into another store."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from heta_eval.redaction import mask_url_credentials
from heta_eval.results.sweep_ids import KIND_TAG, SWEEP_ID_TAG, SWEEP_KIND
from heta_eval.sweep.end import child_runs, summarise_sweep
from heta_eval.tracking.naming import RUN_DIR_TAG, param_value
from heta_eval.tracking.run_context import context_tags
from heta_eval.tracking.run_record import SWEEP_KIND as RECORD_SWEEP
from heta_eval.tracking.run_record import TrackingRecord, read_record, write_record

# Launchers whose jobs are processes of the launching one (they end when it ends): at exit,
# their child runs still RUNNING are ended KILLED. SLURM jobs outlive the launcher.
LOCAL_LAUNCHERS = frozenset({"basic", "joblib", "local_parallel", "submitit_local"})
TAGS_PER_BATCH = 100  # MLflow's per-request limits

log = logging.getLogger("heta_eval.sweep.callback")  # the callback's own log, wherever it runs


def unfinished_parent(client: Any, experiment_id: str, sid: str) -> Any:
    """The latest parent run of this sweep, if it did not finish."""
    found = client.search_runs(
        [experiment_id],
        filter_string=(f"tags.`{SWEEP_ID_TAG}` = '{sid}' and tags.`{KIND_TAG}` = '{SWEEP_KIND}'"),
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    return found[0] if found and found[0].info.status != "FINISHED" else None


def log_params(
    client: Any, run_id: str, params: Mapping[str, str], existing: Mapping[str, str]
) -> None:
    """Log the params not in `existing` (on a resumed parent, the first attempt's stay)."""
    from mlflow.entities import Param

    new = [Param(k, param_value(v)) for k, v in params.items() if k not in existing]
    for i in range(0, len(new), 100):
        client.log_batch(run_id, params=new[i : i + 100])


def set_tags(client: Any, run_id: str, tags: Mapping[str, str]) -> None:
    """Set `tags` on the run, in MLflow's batches."""
    from mlflow.entities import RunTag

    items = [RunTag(k, str(v)) for k, v in tags.items()]
    for i in range(0, len(items), TAGS_PER_BATCH):
        client.log_batch(run_id, tags=items[i : i + TAGS_PER_BATCH])


def end_orphans(client: Any, experiment_id: str, run_id: str, started_ms: int) -> None:
    """Child runs of this attempt (started since `started_ms`) that a killed local worker left
    RUNNING: KILLED."""
    for child in child_runs(client, experiment_id, run_id):
        started = child.info.start_time or 0
        if child.info.status == "RUNNING" and started >= started_ms:
            client.set_terminated(child.info.run_id, status="KILLED")


def warn_not_created(sweep_dir: Path, root: Path, refused: str | None, exc: BaseException) -> None:
    """Say that the parent run was not created (`refused`: why the server refused); the
    sweep and job directories keep everything for `heta-eval-sync`."""
    why = refused or f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
    log.warning(
        "MLflow parent run of sweep %s not created (%s); the jobs run and their directories "
        "keep everything: replay the sweep with heta-eval-sync --root %s",
        sweep_dir,
        why,
        root,
    )


def open_parent(
    tracker: Any,
    sweep_dir: Path,
    sid: str,
    params: dict[str, str],
    tags: dict[str, str],
    run_name: str,
    summary: dict[str, Any] | None = None,
) -> str:
    """Create the parent run, or resume this sweep's unfinished one; its run id. The
    sweep's record is written first; a parent that cannot be created raises, and once it
    exists, a failure ends it FAILED and raises."""
    all_tags = {**context_tags(tags), RUN_DIR_TAG: str(sweep_dir.resolve())}
    record = write_record(
        sweep_dir,
        TrackingRecord(
            kind=RECORD_SWEEP,
            uri=mask_url_credentials(tracker.uri),
            experiment=tracker.experiment,
            artifact_location=tracker.artifact_location,
            run_name=run_name or f"sweep {sweep_dir.name}",
            tags=all_tags,
            params={k: param_value(v) for k, v in params.items()},
            start_time=int(time.time() * 1000),
            sweep=summary or {},
        ),
    )
    # Creates the store and the experiment here, before any (parallel) job starts.
    experiment_id = tracker.experiment_id()
    previous = unfinished_parent(tracker.client, experiment_id, sid)
    if previous is None:
        run = tracker.client.create_run(
            experiment_id, start_time=record.start_time, run_name=record.run_name, tags=all_tags
        )
        tracker.run_id = run.info.run_id
    else:
        tracker.run_id = previous.info.run_id
        tracker.client.update_run(tracker.run_id, status="RUNNING")
    try:
        if previous is None:
            log_params(tracker.client, tracker.run_id, params, existing={})
            log.info("MLflow parent run %s for sweep %s", tracker.run_id, sweep_dir)
        else:
            attempts = int(previous.data.tags.get("heta_eval.sweep_attempts", "1")) + 1
            tags["heta_eval.sweep_attempts"] = str(attempts)
            log_params(tracker.client, tracker.run_id, params, previous.data.params)
            log.info(
                "MLflow parent run %s (%s, sweep_id %s) resumed for sweep %s",
                tracker.run_id,
                previous.info.status,
                sid,
                sweep_dir,
            )
        set_tags(tracker.client, tracker.run_id, tags)
    except Exception:
        with contextlib.suppress(Exception):
            tracker.client.set_terminated(tracker.run_id, status="FAILED")
        raise
    write_record(
        sweep_dir,
        record.model_copy(update={"run_id": tracker.run_id, "tags": {**all_tags, **tags}}),
    )
    return str(tracker.run_id)


def close_parent(
    tracker: Any,
    sweep_dir: Path,
    optimized: str | None,
    suite: Any,
    *,
    exit_status: str | None = None,
    end_orphans_since: int | None = None,
) -> None:
    """Summarise the sweep into its parent run (printing the jobs' table) and end it:
    FINISHED, or FAILED when a job did not finish. With `exit_status` (the sweep exited
    without Hydra's end: a job failed, or it was stopped), only a parent still RUNNING is
    summarised and it ends with that status; `end_orphans_since` ends the child runs a
    killed local job left RUNNING first."""
    run_id = tracker.run_id
    status = exit_status or "FINISHED"
    synced = True
    try:
        if exit_status is not None:
            parent = tracker.client.get_run(run_id)
            if parent.info.status != "RUNNING":
                return
            if end_orphans_since is not None:
                end_orphans(tracker.client, parent.info.experiment_id, run_id, end_orphans_since)
        rows = summarise_sweep(tracker, sweep_dir, optimized, suite)
        unfinished = [row for row in rows if not row.ok]
        if exit_status is None and unfinished:
            status = "FAILED"  # a sweeper that tolerates failures (Optuna) got here
            log.warning(
                "sweep run %s ends FAILED: %s",
                run_id,
                "; ".join(
                    f"{row.run_name or row.run_id} is {row.status}"
                    + (f" ({row.error})" if row.error else "")
                    for row in unfinished
                ),
            )
    except Exception as exc:  # the sweep ran; a missing summary does not fail it
        log.warning("could not summarise sweep run %s: %s", run_id, exc)
        synced = False
    try:
        tracker.client.set_terminated(run_id, status=status)
    except Exception as exc:
        synced = False
        log.warning(
            "could not end sweep run %s: %s; replay it with heta-eval-sync --root %s",
            run_id,
            exc,
            tracker.root,
        )
    mark_sweep(sweep_dir, status, synced)


def mark_sweep(sweep_dir: Path, status: str, synced: bool) -> None:
    """The sweep's record ends with `status` (`synced`: MLflow holds its summary)."""
    record = read_record(sweep_dir)
    if record is not None:
        write_record(sweep_dir, record.model_copy(update={"status": status, "synced": synced}))
