"""`heta-eval-sync`: upload to MLflow the tracking data runs kept while it was unreachable.

    heta-eval-sync                      # entries under ./outputs/tracking_outbox
    heta-eval-sync --root /data/evals   # the paths.root of the runs
    heta-eval-sync --uri http://mlflow-host:5000   # another server than the runs used

Each finished entry is replayed into its run: the run the evaluation created before the
outage is continued, otherwise a run is created (tagged `heta_eval.outbox_id`, so that a
sync interrupted after creating it finds it again instead of making a second). Each step
(params, tags, metrics, case table, artifacts, final status) is marked done in the entry
once it succeeded, and is itself safe to repeat; a synced entry is never sent again. An
entry whose run is still going (or was killed and not resumed) waits.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heta_eval.tracking.access import access_problem
from heta_eval.tracking.lenient import REJECTED_TAG, log_leniently
from heta_eval.tracking.outbox import OUTBOX_TAG, Outbox, OutboxEntry

log = logging.getLogger(__name__)


@dataclass
class SyncResult:
    """What one entry's sync did."""

    entry_id: str
    run_id: str | None
    uploaded: list[str]
    error: str | None = None


def artifact_location(entry: OutboxEntry, uri: str | None, root: Path) -> str | None:
    """Where an experiment the sync creates keeps its artifacts: where the run meant to
    (same store), beside a SQLite store's file, under `root` for another database store;
    a tracking server or file store decides itself. Never MLflow's default for a database,
    `./mlruns` of whatever directory the sync runs in."""
    from heta_eval.tracking.mlflow_tracker import is_database_uri
    from heta_eval.tracking.sqlite_store import sqlite_path

    target = uri or entry.uri
    if target == entry.uri and entry.artifact_location:
        return entry.artifact_location
    if not is_database_uri(target):
        return None
    database = sqlite_path(target)
    if database is not None and database.name != ":memory:":
        return (database.expanduser().resolve().parent / "mlruns").as_uri()
    return (root / "mlruns").resolve().as_uri()


def _experiment_id(client: Any, entry: OutboxEntry, location: str | None) -> str:
    found = client.get_experiment_by_name(entry.experiment)
    if found is not None:
        return found.experiment_id
    try:
        return client.create_experiment(entry.experiment, artifact_location=location)
    except Exception:
        found = client.get_experiment_by_name(entry.experiment)
        if found is None:
            raise
        return found.experiment_id


def _run(client: Any, entry: OutboxEntry, location: str | None) -> tuple[Any, bool]:
    """The entry's run on the server (found or created) and whether it was created now."""
    if entry.server_run_id:
        try:
            return client.get_run(entry.server_run_id), False
        except Exception as exc:
            if getattr(exc, "error_code", "") != "RESOURCE_DOES_NOT_EXIST":
                raise
    experiment_id = _experiment_id(client, entry, location)
    found = client.search_runs(
        [experiment_id], filter_string=f"tags.`{OUTBOX_TAG}` = '{entry.entry_id}'"
    )
    if found:
        return found[0], False
    tags = {**entry.tags, OUTBOX_TAG: entry.entry_id}
    start = int(entry.created_at.timestamp() * 1000)
    run = client.create_run(experiment_id, start_time=start, tags=tags, run_name=entry.run_name)
    return run, True


def sync_entry(outbox: Outbox, entry: OutboxEntry, uri: str | None = None) -> SyncResult:
    """Upload one finished entry; each step is recorded in the entry as it completes."""
    location = artifact_location(entry, uri, outbox.directory.parent)
    from mlflow.entities import Metric, Param, RunTag

    from heta_eval.tracking.sqlite_store import open_client

    client = open_client(uri or entry.uri)
    uploaded: list[str] = []
    run, created = _run(client, entry, location)
    run_id = run.info.run_id
    if created or entry.server_run_id != run_id:
        entry = _saved(outbox, entry, server_run_id=run_id)
        uploaded.append("run")

    def step(name: str) -> bool:
        return name not in entry.done

    rejected: list[str] = []
    if step("params"):
        # A param cannot change: send only those the run lacks.
        params = [Param(k, v) for k, v in entry.params.items() if k not in run.data.params]
        refused = log_leniently(client, run_id, params=params)
        rejected += refused
        entry = _done(outbox, entry, "params")
        uploaded.append(f"{len(params) - len(refused)} params")
    if step("tags"):
        tags = [RunTag(k, v) for k, v in {**entry.tags, OUTBOX_TAG: entry.entry_id}.items()]
        rejected += log_leniently(client, run_id, tags=tags)
        entry = _done(outbox, entry, "tags")
    if step("metrics"):
        # Same key, value, timestamp and step: the store keeps one, so a repeat adds nothing.
        metrics = [Metric(k, v, t, s) for k, v, t, s in entry.metrics]
        refused = log_leniently(client, run_id, metrics=metrics)
        rejected += refused
        entry = _done(outbox, entry, "metrics")
        uploaded.append(f"{len(metrics) - len(refused)} metrics")
    if rejected:
        # Said on the run and by the command; the rest of the entry is uploaded.
        note = f"{len(rejected)} item(s): {'; '.join(rejected[:20])}"[:5000]
        client.set_tag(run_id, REJECTED_TAG, note)
        uploaded.append(f"{len(rejected)} refused by MLflow ({'; '.join(rejected[:3])})")
    if step("table"):
        if entry.table is not None:
            names = {a.path for a in client.list_artifacts(run_id)}
            if entry.table_name not in names:  # log_table appends to an existing table
                data = json.loads(outbox.file(entry, entry.table).read_text(encoding="utf-8"))
                client.log_table(run_id, data=data, artifact_file=entry.table_name)
            uploaded.append(entry.table_name)
        entry = _done(outbox, entry, "table")
    if step("artifacts"):
        for name in entry.artifacts:
            client.log_artifact(run_id, str(outbox.file(entry, name)))  # overwrites
            uploaded.append(name)
        entry = _done(outbox, entry, "artifacts")
    if step("status"):
        client.set_terminated(run_id, status=entry.status)
        entry = _done(outbox, entry, "status")
        uploaded.append(f"status {entry.status}")
    _saved(outbox, entry, synced=True)
    return SyncResult(entry.entry_id, run_id, uploaded)


def _saved(outbox: Outbox, entry: OutboxEntry, **fields: Any) -> OutboxEntry:
    entry = entry.model_copy(update=fields)
    outbox.save(entry)
    return entry


def _done(outbox: Outbox, entry: OutboxEntry, name: str) -> OutboxEntry:
    return _saved(outbox, entry, done=[*entry.done, name])


def sync(root: Path, uri: str | None = None) -> tuple[list[SyncResult], list[OutboxEntry]]:
    """Upload every pending entry under `root`; (results, entries still running)."""
    outbox = Outbox(root)
    results: list[SyncResult] = []
    waiting: list[OutboxEntry] = []
    for entry in outbox.entries():
        if entry.synced:
            continue
        if entry.status is None:
            waiting.append(entry)
            continue
        try:
            results.append(sync_entry(outbox, entry, uri))
        except Exception as exc:
            refused = access_problem(uri or entry.uri, exc, entry.experiment)
            reason = refused or f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            results.append(SyncResult(entry.entry_id, entry.server_run_id, [], reason))
    return results, waiting
