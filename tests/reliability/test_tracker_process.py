"""The MLflow tracker's worker process (heta_eval/run/tracker_process.py): a `heta-eval`
killed mid-evaluation leaves a worker that exits by itself without ending the run, and the
rerun continues that run; a worker that cannot start, or dies mid-run, is replaced by the
in-process tracker, which continues the same run."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from pathlib import Path

import pytest
from heta_eval.run.tracker_process import TrackerProcess
from mlflow import MlflowClient

from heta_eval import EvaluationReport, evaluate
from heta_eval.run import tracker_process
from heta_eval.run.parent_watch import process_gone
from heta_eval.tracking.mlflow_tracker import MlflowTracker

from .conftest import mlflow_runs
from .processes import SLOW_INDEX, after_tracking, run_cli, start_cli, tracker_workers


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the worker through /proc")
def test_a_killed_run_leaves_no_worker_and_its_rerun_continues_the_same_run(
    tmp_path: Path,
) -> None:
    root = tmp_path / "outputs"
    # Units journal their results as they finish: 49 lines when all are done.
    args = (
        "benchmark=sample_units",
        SLOW_INDEX,
        "+recipe.indexes.bm25.seconds=0.05",
        "runner.max_concurrent_queries=1",
        after_tracking(root),
    )
    victim = start_cli(root, tmp_path, *args)
    deadline = time.monotonic() + 180
    workers: set[int] = set()
    marker = None
    while time.monotonic() < deadline and victim.poll() is None:
        workers = workers or tracker_workers(victim.pid)
        journals = list((root / "state").glob("*/journal.jsonl"))
        markers = list((root / "state").glob("*/tracking.json"))
        if workers and markers and journals and journals[0].read_text().count("\n") >= 12:
            marker = json.loads(markers[0].read_text())
            break
        time.sleep(0.05)
    # Mid-evaluation: queries journaled, the worker saved the run it started.
    assert marker is not None and victim.poll() is None, victim.communicate()
    (worker,) = workers
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=30)  # returns: the worker holds none of the victim's pipes
    assert victim.returncode == -9
    deadline = time.monotonic() + 30
    while not process_gone(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_gone(worker), "the tracker worker outlived the killed run"
    (killed,) = mlflow_runs(root)
    assert killed.info.run_id == marker["run_id"] and killed.info.status == "RUNNING"

    rerun = run_cli(root, tmp_path, *args)
    assert rerun.returncode == 0, rerun.stderr
    assert "resuming:" in rerun.stdout + rerun.stderr
    report = EvaluationReport.read_json(rerun.report_path)
    assert 10 <= report.run.resumed_cases < len(report.case_results)
    (run,) = mlflow_runs(root)
    assert run.info.run_id == killed.info.run_id and run.info.status == "FINISHED"
    assert report.run.tracking.run_id == run.info.run_id
    assert run.data.metrics["cases.resumed"] == report.run.resumed_cases


def test_a_worker_that_cannot_start_leaves_tracking_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(tracker_process, "WORKER", "heta_eval.run.no_such_worker")
    root = tmp_path / "outputs"
    with caplog.at_level(logging.WARNING, logger="heta_eval"):
        report = evaluate(overrides=[f"paths.root={root}", "runner.limit=3"])
    assert "the MLflow tracking worker" in caplog.text
    assert "tracking goes on in this process" in caplog.text
    (run,) = mlflow_runs(root)
    assert run.info.status == "FINISHED" and report.run.tracking.run_id == run.info.run_id
    assert run.data.metrics["cases.evaluated"] == 3
    (marker,) = (root / "state").glob("*/tracking.json")
    assert json.loads(marker.read_text())["run_id"] == run.info.run_id
    assert f"(run {run.info.run_id})" in report.run.tracking.where


@pytest.mark.slow
def test_a_worker_that_dies_mid_run_is_replaced_and_the_run_continues(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = {"_target_": "heta_eval.tracking.MlflowTracker", "root": str(tmp_path)}
    proxy = TrackerProcess(MlflowTracker(root=tmp_path), spec, timeout=120)
    proxy.connect()
    try:
        proxy.start(run_name="r", config={"a": 1}, tags={"t": "v"}, state_dir=tmp_path / "s")
        run_id = proxy.run_id  # waits for the worker's answer
        assert run_id is not None
        saved = json.loads((tmp_path / "s" / "tracking.json").read_text())
        assert saved["run_id"] == run_id
        worker = proxy._worker
        assert worker is not None
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
        with caplog.at_level(logging.WARNING, logger="heta_eval"):
            proxy.end("FINISHED")
        assert "the MLflow tracking worker" in caplog.text and "exit status -9" in caplog.text
        assert proxy.run_id == run_id and run_id in proxy.describe()
    finally:
        proxy.close()
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params == {"a": "1"} and run.data.tags["t"] == "v"
    assert len(mlflow_runs(tmp_path)) == 1


def test_a_rerun_waits_for_the_tracking_run_a_killed_attempts_worker_is_creating(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Killed right after asking its worker to start the run, an attempt leaves the worker
    creating it; the rerun waits for the id that worker saves (a second of MLflow later),
    never opening a second run beside it. A marker whose worker is gone is dropped."""
    import subprocess
    import sys

    from heta_eval.records import RunIdentity
    from heta_eval.run.state import RunState, note_tracking_start

    identity = RunIdentity(digest="d" * 64, config="c" * 64, data="e" * 64, code="f" * 64)
    state = RunState(tmp_path / "state", identity)
    uri = "sqlite:///somewhere/mlflow.db"
    # Stands in for the worker: saves the run's id a second after it starts, as
    # tracker_worker does once MLflow has created the run.
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; time.sleep(1.0); "
            "from heta_eval.run.state import save_tracking_run; "
            "save_tracking_run(Path(sys.argv[1]), sys.argv[2], 'run-of-the-killed-attempt')",
            str(state.directory),
            uri,
        ]
    )
    try:
        note_tracking_start(state.directory, uri, worker.pid)
        started = time.monotonic()
        with caplog.at_level(logging.INFO, logger="heta_eval"):
            assert state.tracking_run(uri) == "run-of-the-killed-attempt"
        assert time.monotonic() - started >= 0.5  # it waited for the worker
        assert f"worker (pid {worker.pid}) is creating" in caplog.text
    finally:
        worker.wait(timeout=60)
    assert not (state.directory / "tracking.starting.json").exists()

    # A worker that died before saving anything: nothing to wait for, the marker goes.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (state.directory / "tracking.json").unlink()
    note_tracking_start(state.directory, uri, gone.pid)
    started = time.monotonic()
    assert state.tracking_run(uri) is None
    assert time.monotonic() - started < 0.5
    assert not (state.directory / "tracking.starting.json").exists()
