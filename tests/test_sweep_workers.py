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
import tempfile
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
        # The worker logged the report it was handed; report.json went as the file it is.
        with tempfile.TemporaryDirectory() as out:
            logged = client.download_artifacts(run.info.run_id, "report.json", out)
            assert Path(logged).read_bytes() == (run_dir / "report.json").read_bytes()
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
    from heta_eval.results.sweep_rows import JOBS_DIR

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


def _logged_table(client: MlflowClient, run_id: str, out: Path) -> dict[str, list[object]]:
    """The run's case table (case_results.json) as columns."""
    from heta_eval.tracking.mlflow_tracker import CASE_TABLE

    table = json.loads(Path(client.download_artifacts(run_id, CASE_TABLE, str(out))).read_text())
    return {c: [row[i] for row in table["data"]] for i, c in enumerate(table["columns"])}


@pytest.mark.slow
def test_the_shared_worker_logs_the_report_it_is_handed_and_report_json_as_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep's job hands the shared worker the report as the tracker logs it
    (`report_for_logging`, with the `finish` call): the worker never reads report.json back
    (at 1M documents, 10-19 s of reading and checking), only logs it as a file. Here
    report.json on disk says other scores than the report handed over: the run's metrics
    are the handed report's, its report.json the file's bytes."""
    from heta_eval.run.tracker_process import TrackerProcess

    from heta_eval import evaluate
    from heta_eval.run import sweep_workers
    from heta_eval.tracking.mlflow_tracker import (
        TOP_DOCUMENTS,
        MlflowTracker,
        case_table,
        report_metrics,
    )

    report = evaluate(overrides=[f"paths.root={tmp_path / 'untracked'}", "tracking=none"])
    assert max(len(r.retrieved) for r in report.case_results) > TOP_DOCUMENTS
    root = tmp_path / "outputs"
    monkeypatch.setattr(sweep_workers, "_enabled", True)  # as in a basic-launcher sweep
    spec = {"_target_": "heta_eval.tracking.MlflowTracker", "root": str(root)}
    handed: dict[str, Path] = {}
    try:
        for job in ("first", "second"):  # two jobs, one worker
            proxy = TrackerProcess(MlflowTracker(root=root), spec, timeout=120)
            proxy.connect()
            assert proxy.shared
            proxy.start(run_name=job, config={"job": job}, tags={})
            other = report.model_copy(
                update={"score_summary": dict.fromkeys(report.score_summary, 0.0)}
            )
            path = other.write_json(tmp_path / job / "report.json")
            proxy.hand_over(report, {"report": path}, status="FINISHED", state_dir=None)
            handed[str(proxy.run_id)] = path
        sweep_workers.finish()
    finally:
        sweep_workers.shutdown()
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    expected = {name: value for name, value, _ in report_metrics(report)}
    assert any(expected[k] > 0 for k in expected if k.startswith("bm25.ndcg"))
    for run_id, path in handed.items():
        run = client.get_run(run_id)
        assert run.info.status == "FINISHED"
        assert run.data.metrics == pytest.approx(expected)
        with tempfile.TemporaryDirectory() as out:
            logged = client.download_artifacts(run_id, "report.json", out)
            assert Path(logged).read_bytes() == path.read_bytes()
            table = _logged_table(client, run_id, Path(out))
        assert table["top_documents"] == case_table(report)["top_documents"]
