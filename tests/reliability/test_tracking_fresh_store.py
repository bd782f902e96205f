"""A fresh SQLite store and parallel starts (issue 17, item 8): four `heta-eval` processes
started at once on a new `mlflow.db` all track their runs (the schema is created once, under
a lock), and a store held locked by another process makes tracking wait, not give up."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from heta_eval.tracking.mlflow_tracker import MlflowTracker
from heta_eval.tracking.sqlite_store import open_client

from ..tracking_readback import record_of
from .conftest import mlflow_runs
from .processes import start_cli


@pytest.mark.slow  # four heta-eval processes at once
def test_four_processes_on_a_new_store_all_track_their_runs(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    procs = [start_cli(root, tmp_path, "runner.limit=2", f"runner.top_k={k}") for k in (3, 4, 5, 6)]
    outputs = [p.communicate(timeout=600) for p in procs]
    done = [(p.returncode, out, err) for p, (out, err) in zip(procs, outputs, strict=True)]
    for code, out, err in done:
        assert code == 0, err
        assert "NOT IN MLFLOW" not in out and "failed (" not in out + err, out + err
        assert "already exists" not in err and "duplicate column" not in err, err
    records = [record_of(p.parent) for p in root.glob("runs/*/*/tracking.json")]
    assert len(records) == 4 and all(r.synced for r in records)
    runs = mlflow_runs(root)
    assert len(runs) == 4
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert {r.data.params["runner.top_k"] for r in runs} == {"3", "4", "5", "6"}
    assert all(r.data.metrics for r in runs)


@pytest.mark.slow  # waits 7 s for a lock on purpose
def test_tracking_waits_for_a_store_another_process_holds_locked(tmp_path: Path) -> None:
    tracker = MlflowTracker(root=tmp_path)
    tracker.start(run_name="first", config={"a": 1}, tags={}, run_dir=tmp_path / "first")
    tracker.end()
    # Another writer holds the database's write lock for longer than SQLite's own 5 s wait.
    holder = sqlite3.connect(
        tmp_path / "mlflow.db", timeout=0, isolation_level=None, check_same_thread=False
    )
    holder.execute("BEGIN EXCLUSIVE")
    released = threading.Event()

    def release() -> None:
        time.sleep(7)
        holder.execute("COMMIT")
        holder.close()
        released.set()

    threading.Thread(target=release, daemon=True).start()
    second = MlflowTracker(root=tmp_path)
    second.start(run_name="second", config={"b": 2}, tags={}, run_dir=tmp_path / "second")
    second.end()
    assert released.is_set()  # the writes above really met the lock
    assert not second.offline and record_of(tmp_path / "second").reason == ""
    runs = {r.info.run_name: r for r in mlflow_runs(tmp_path)}
    assert runs["second"].info.status == "FINISHED"
    assert runs["second"].data.params == {"b": "2"}


def test_open_client_creates_the_schema_once_under_its_lock(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}"
    client = open_client(uri)
    assert (tmp_path / "new" / "mlflow.db").is_file()
    assert (tmp_path / "new" / "mlflow.db.lock").is_file()
    assert [e.name for e in client.search_experiments()] == ["Default"]
