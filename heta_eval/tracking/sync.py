"""`heta-eval-sync`: replay run directories into MLflow.

    heta-eval-sync                      # the unsynced run directories under ./outputs
    heta-eval-sync --root /data/evals   # the paths.root of the runs
    heta-eval-sync --uri sqlite:///new.db   # every tracked run directory, into another store

A run directory holds everything its MLflow run shows (`tracking.json`: name, tags, params;
report.json and the files beside it), so a run whose tracking failed, or a store that was
lost, is brought back from the directories alone. Sweeps come first (their parent runs),
then runs (children re-attached to their sweep's parent), then each replayed sweep's
summary. A run is found again by its `heta_eval.run_dir` tag, so a replay interrupted after
creating a run continues it instead of making a second; every step is safe to repeat. A run
directory whose run has not ended (still running, or killed and not resumed) waits.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationReport
from heta_eval.records.suite import suite_from_config
from heta_eval.tracking.access import access_problem
from heta_eval.tracking.mlflow_tracker import is_database_uri
from heta_eval.tracking.naming import RUN_DIR_TAG
from heta_eval.tracking.projection import REPORT_JSON, log_params_and_tags, log_report, run_files
from heta_eval.tracking.run_record import (
    RECORD_FILE,
    SWEEP_KIND,
    TrackingRecord,
    read_record,
    write_record,
)
from heta_eval.tracking.sqlite_store import open_client, sqlite_path

log = logging.getLogger(__name__)
PARENT_TAG = "mlflow.parentRunId"


@dataclass
class SyncResult:
    """What replaying one run (or sweep) directory did."""

    directory: Path
    run_id: str | None
    uploaded: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class ParentRef:
    """A sweep's parent run in the store being synced (what the sweep summary needs)."""

    client: Any
    run_id: str
    uri: str
    root: Path


# What paths.root holds besides run and sweep directories: never walked (the object store
# and the caches can hold millions of files).
NOT_RUN_DIRECTORIES = frozenset({"store", "cache", "data", "state", "mlruns"})


def tracked_directories(root: Path) -> list[tuple[Path, TrackingRecord]]:
    """Every run and sweep directory under `root` with a tracking record, sweeps first,
    each group oldest first."""
    found = []
    for directory, subdirectories, files in os.walk(root):
        if Path(directory) == Path(root):
            subdirectories[:] = [d for d in subdirectories if d not in NOT_RUN_DIRECTORIES]
        if RECORD_FILE in files:
            record = read_record(Path(directory))
            if record is not None:
                found.append((Path(directory), record))
    found.sort(key=lambda item: (item[1].kind != SWEEP_KIND, item[1].start_time or 0))
    return found


def artifact_location(record: TrackingRecord, uri: str, root: Path) -> str | None:
    """Where an experiment the sync creates keeps its artifacts: where the run meant to
    (same store), beside a SQLite store's file, under `root` for another database store;
    a tracking server or file store decides itself."""

    if uri == record.uri and record.artifact_location:
        return record.artifact_location
    if not is_database_uri(uri):
        return None
    database = sqlite_path(uri)
    if database is not None and database.name != ":memory:":
        return (database.expanduser().resolve().parent / "mlruns").as_uri()
    return (root / "mlruns").resolve().as_uri()


def _experiment_id(client: Any, record: TrackingRecord, location: str | None) -> str:
    found = client.get_experiment_by_name(record.experiment)
    if found is not None:
        return str(found.experiment_id)
    try:
        return str(client.create_experiment(record.experiment, artifact_location=location))
    except Exception:
        found = client.get_experiment_by_name(record.experiment)
        if found is None:
            raise
        return str(found.experiment_id)


def _run(
    client: Any, directory: Path, record: TrackingRecord, uri: str, root: Path, parent: str | None
) -> tuple[str, bool]:
    """The directory's run in the target store (continued, found again or created) and
    whether it was created now."""
    if uri == record.uri and record.run_id:
        try:
            run = client.get_run(record.run_id)
            if run.info.lifecycle_stage == "active":
                return record.run_id, False
        except Exception as exc:
            if getattr(exc, "error_code", "") != "RESOURCE_DOES_NOT_EXIST":
                raise
    experiment_id = _experiment_id(client, record, artifact_location(record, uri, root))
    where = str(directory.resolve()).replace("'", "\\'")
    found = client.search_runs([experiment_id], filter_string=f"tags.`{RUN_DIR_TAG}` = '{where}'")
    if found:
        return found[0].info.run_id, False
    tags = _tags(directory, record, parent)
    run = client.create_run(
        experiment_id, start_time=record.start_time, tags=tags, run_name=record.run_name
    )
    return run.info.run_id, True


def _tags(directory: Path, record: TrackingRecord, parent: str | None) -> dict[str, str]:
    tags = {k: v for k, v in record.tags.items() if k != PARENT_TAG}
    tags.setdefault(RUN_DIR_TAG, str(directory.resolve()))
    if parent:
        tags[PARENT_TAG] = parent
    return tags


def replay(
    client: Any,
    directory: Path,
    record: TrackingRecord,
    uri: str,
    root: Path,
    parent: str | None = None,
) -> SyncResult:
    """Replay one run directory (a report's, or a sweep's parent without its summary)."""
    run_id, created = _run(client, directory, record, uri, root, parent)
    result = SyncResult(directory, run_id, ["run created"] if created else [])
    refused = log_params_and_tags(client, run_id, record.params, _tags(directory, record, parent))
    result.uploaded.append(f"{len(record.params)} params")
    report_path = directory / REPORT_JSON
    if record.kind != SWEEP_KIND and report_path.is_file():
        report = EvaluationReport.model_validate_json(report_path.read_bytes())
        refused += log_report(client, run_id, report, run_files(directory))
        result.uploaded.append("report")
    if refused:
        result.uploaded.append(f"{len(refused)} refused by MLflow ({'; '.join(refused[:3])})")
    if record.kind != SWEEP_KIND and record.status:
        client.set_terminated(run_id, status=record.status)
        result.uploaded.append(f"status {record.status}")
    return result


# The sweep summary (`heta_eval.sweep.end.summarise_sweep`): given by the caller, since the
# sweep package sits above tracking. Called as (parent, sweep_dir, optimized, suite, quiet).
Summarise = Callable[..., Any]


def finish_sweep(
    client: Any,
    directory: Path,
    record: TrackingRecord,
    uri: str,
    root: Path,
    run_id: str,
    summarise: Summarise,
) -> None:
    """Summarise a replayed sweep into its parent (quietly) and end it with its status."""

    suite = record.sweep.get("suite")
    summarise(
        ParentRef(client, run_id, uri, root),
        directory,
        record.sweep.get("optimized"),
        suite_from_config(suite) if suite else None,
        quiet=True,
    )
    client.set_terminated(run_id, status=record.status or "FINISHED")


def sync(
    root: Path, summarise: Summarise, uri: str | None = None
) -> tuple[list[SyncResult], list[Path]]:
    """Replay the run directories under `root` that MLflow lacks (with `uri`: every tracked
    one, into that store), each replayed sweep summarised by `summarise`; (results,
    directories whose run has not ended)."""

    clients: dict[str, Any] = {}
    results: list[SyncResult] = []
    waiting: list[Path] = []
    parents: dict[str, str] = {}  # sweep directory -> its parent run in the target store
    sweeps: list[tuple[Path, TrackingRecord, str]] = []
    for directory, record in tracked_directories(root):
        target = uri or record.uri
        again = record.synced and target == record.uri
        if record.kind == SWEEP_KIND and again and record.run_id:
            parents[str(directory.resolve())] = record.run_id
        if again:
            continue
        if record.status is None:
            waiting.append(directory)
            continue
        try:
            client = clients.get(target) or clients.setdefault(target, open_client(target))
            parent = parents.get(record.sweep_dir or "")
            result = replay(client, directory, record, target, root, parent)
            if record.kind == SWEEP_KIND:
                parents[str(directory.resolve())] = str(result.run_id)
                sweeps.append((directory, record, str(result.run_id)))
            elif target == record.uri:
                write_record(
                    directory, record.model_copy(update={"run_id": result.run_id, "synced": True})
                )
            results.append(result)
        except Exception as exc:
            refused = access_problem(target, exc, record.experiment)
            reason = refused or f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            results.append(SyncResult(directory, record.run_id, [], reason))
    for directory, record, run_id in sweeps:
        target = uri or record.uri
        try:
            finish_sweep(clients[target], directory, record, target, root, run_id, summarise)
            if target == record.uri:
                write_record(
                    directory, record.model_copy(update={"run_id": run_id, "synced": True})
                )
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            results.append(SyncResult(directory, run_id, [], f"sweep summary: {reason}"))
    return results, waiting
