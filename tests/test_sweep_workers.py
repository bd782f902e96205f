"""A sweep's jobs in one process (Hydra's basic launcher) share one MLflow tracker worker and
one report.html figure worker (heta_eval/run/sweep_workers.py): each job hands its logging,
its completion and its page over and the next job starts; every run is complete, with its
report.html, before the sweep's summary reads them. Real `python -m heta_eval -m ...`
processes on the bundled sample benchmark, the store read back with MlflowClient."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from .conftest import job_logs, user_env
from .reliability.processes import tracker_workers


def _sweep(tmp_path: Path, *overrides: str) -> tuple[subprocess.CompletedProcess[str], set[int]]:
    """Run a basic-launcher sweep; the tracker worker processes seen while it ran."""
    root = tmp_path / "outputs"
    command = [sys.executable, "-m", "heta_eval", "-m", f"paths.root={root}", *overrides]
    env = user_env(PYTHONWARNINGS="ignore::DeprecationWarning")
    seen: set[int] = set()
    with subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            seen |= tracker_workers(proc.pid)
            time.sleep(0.1)  # a worker per job (before) lived for seconds
        stdout, stderr = proc.communicate(timeout=60)
    done = subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)
    assert done.returncode == 0, stderr + job_logs(root)
    return done, seen


def _children(root: Path) -> list[object]:
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("heta_eval")
    runs = client.search_runs([experiment.experiment_id])
    return sorted(
        (r for r in runs if "mlflow.parentRunId" in r.data.tags),
        key=lambda r: int(r.data.tags["heta_eval.sweep_job"]),
    )


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the worker through /proc")
def test_one_tracker_worker_serves_every_job_and_each_run_is_complete(tmp_path: Path) -> None:
    done, workers = _sweep(tmp_path, "runner.top_k=5,10,20")
    root = tmp_path / "outputs"
    assert len(workers) == 1, f"tracker workers seen: {sorted(workers)}"
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    children = _children(root)
    assert [r.data.params["runner.top_k"] for r in children] == ["5", "10", "20"]
    for run in children:
        assert run.info.status == "FINISHED"
        assert "bm25.ndcg_at_10" in run.data.metrics and "cases.evaluated" in run.data.metrics
        files = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"report.json", "report.html", "config.resolved.yaml"} <= files, files
        assert "case_results.json" in files
        run_dir = Path(run.data.tags["heta_eval.run_dir"])
        page = (run_dir / "report.html").read_text(encoding="utf-8")
        assert "<img" in page and "data:image/png;base64," in page
        assert f"html report: {run_dir}/report.html" in done.stdout
    # The worker records each job's completion once its run has everything.
    markers = [json.loads(p.read_text()) for p in (root / "state").glob("*/done.json")]
    assert sorted(m["tracking_run_id"] for m in markers) == sorted(r.info.run_id for r in children)
    assert "sweep: 3 job(s), 3 finished, 0 failed" in done.stdout


@pytest.mark.slow
def test_a_later_job_of_the_same_identity_reuses_the_earlier_one(tmp_path: Path) -> None:
    # runner.progress is outside the run's identity: job 1 finds job 0's result, recorded
    # by the shared worker after job 0 handed it over.
    done, _ = _sweep(tmp_path, "runner.progress=off,lines")
    first, second = _children(tmp_path / "outputs")
    assert first.info.status == second.info.status == "FINISHED"
    assert "heta_eval.reused_from.run_id" not in first.data.tags
    assert second.data.tags["heta_eval.reused_from.run_id"] == first.info.run_id
    assert second.data.metrics["bm25.ndcg_at_10"] == first.data.metrics["bm25.ndcg_at_10"]
    assert "reusing that result" in done.stdout + done.stderr


@pytest.mark.slow
def test_a_terminated_sweep_leaves_its_finished_jobs_complete(tmp_path: Path) -> None:
    # SIGTERM once a job has finished: what the jobs handed over is finished before the
    # process exits, so every job that finished has its complete run, and the parent ends
    # KILLED with their summary.
    from heta_eval.tracking.sweep_summary import JOBS_DIR

    root = tmp_path / "outputs"
    env = user_env(PYTHONWARNINGS="ignore::DeprecationWarning")
    command = [sys.executable, "-m", "heta_eval", "-m", f"paths.root={root}"]
    # 12 jobs, one after another: the kill comes after the first, long before the last.
    command += ["recipe.chunk_size=range(8,104,8)"]
    with subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as proc:
        deadline = time.monotonic() + 120
        while not list(root.glob(f"multiruns/*/*/{JOBS_DIR}/*.json")):
            assert proc.poll() is None and time.monotonic() < deadline, "no job finished"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    finished = [r for r in _children(root) if r.info.status == "FINISHED"]
    assert finished, stderr
    for run in finished:
        files = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"report.json", "report.html", "case_results.json"} <= files, files
    (parent,) = [
        r
        for r in client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])
        if r.data.tags.get("heta_eval.kind") == "sweep"
    ]
    assert parent.info.status == "KILLED"
    assert parent.data.metrics["sweep.jobs_finished"] == len(finished)
