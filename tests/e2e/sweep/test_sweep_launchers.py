"""Sweeps that need a real process: launchers whose jobs run in other processes (joblib,
submitit), and the basic launcher's exits that go through `atexit` (a failed job) or a
signal (SIGTERM): the MLflow parent run's lifecycle and its summary.

Real `python -m heta_eval -m ...` subprocesses on the bundled sample benchmark; the MLflow
store they write is read back with MlflowClient. A sweep that is signalled is held first, in
a state it cannot leave by itself (tests/gates.py: a job waits at a gate).
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from heta_eval.benchmarks.sample import SAMPLE_DATA
from heta_eval.results.sweep_rows import (
    JOBS_DIR,
)
from heta_eval.sweep.callback import (
    BEST_RUN_TAG,
    BEST_TABLE,
    PARENT_RUN_FILE,
    SUMMARY_TABLE,
    SWEEP_ID_FILE,
)
from heta_eval.tracking.naming import table_column
from heta_eval.tracking.run_record import read_record

from ...conftest import CliRunner, job_logs
from ...gates import pause_after
from ...reliability.processes import cli_env, descendants, kill_left_over

# A sweep whose second job fails at run time (its documents file does not exist), after
# config validation: Hydra runs every job, then exits 1 without calling on_multirun_end.
FAILING_SWEEP = (
    "benchmark=jsonl",
    "benchmark.documents=a.jsonl,missing.jsonl",
    f"benchmark.cases={SAMPLE_DATA / 'cases.jsonl'}",
)


def _client(root: Path) -> MlflowClient:
    return MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")


def _runs(root: Path) -> tuple[list[Any], list[Any]]:
    """(parent runs, child runs) of the default experiment."""
    client = _client(root)
    experiment = client.get_experiment_by_name("heta_eval")
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    return parents, children


def _summary(
    root: Path, run_id: str, dest: Path, name: str = SUMMARY_TABLE
) -> list[dict[str, Any]]:
    path = _client(root).download_artifacts(run_id, name, str(dest))
    table = json.loads(Path(path).read_text())
    return [dict(zip(table["columns"], row, strict=True)) for row in table["data"]]


def _with_documents(tmp_path: Path) -> None:
    shutil.copy(SAMPLE_DATA / "documents.jsonl", tmp_path / "a.jsonl")


@pytest.mark.slow  # joblib workers are processes
def test_parallel_sweep_on_a_fresh_store_groups_jobs_under_a_summarised_parent(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    root = tmp_path / "outputs"
    assert not root.exists()
    proc = run_cli(
        "-m",
        "hydra/launcher=local_parallel",
        "hydra.launcher.n_jobs=2",
        "recipe.chunk_size=16,32,64,128",
    )
    assert proc.returncode == 0, proc.stderr
    parents, children = _runs(root)
    assert len(parents) == 1 and len(children) == 4
    (parent,) = parents
    why = proc.stdout + proc.stderr + job_logs(root)
    assert parent.info.status == "FINISHED", why
    assert all(r.info.status == "FINISHED" for r in children), why
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in children)
    assert sorted(int(r.data.params["recipe.chunk_size"]) for r in children) == [16, 32, 64, 128]
    assert all("bm25.evidence_recall_at_1" in r.data.metrics for r in children)

    tags, params, metrics = parent.data.tags, parent.data.params, parent.data.metrics
    sid = tags["heta_eval.sweep_id"]
    assert len(sid) == 16 and int(sid, 16) >= 0
    assert tags["benchmark.name"] == "sample" and tags["recipe.name"] == "bm25"
    assert params["recipe.chunk_size"] == "16,32,64,128"
    assert params["sweep.launcher"] == "local_parallel" and params["sweep.sweeper"] == "basic"
    sweep_dir = Path(tags["heta_eval.sweep_dir"])
    assert (sweep_dir / SWEEP_ID_FILE).read_text() == sid
    assert (sweep_dir / PARENT_RUN_FILE).read_text() == parent.info.run_id

    # best/<score>: the highest mean, with that run's CI bounds beside it; the runs that
    # reached them in sweep_best.json, not in a tag each.
    by_id = {r.info.run_id: r for r in children}
    recall = "bm25.evidence_recall_at_1"
    assert metrics[f"best/{recall}"] == max(r.data.metrics[recall] for r in children)
    best_rows = {
        row["metric"]: row for row in _summary(root, parent.info.run_id, tmp_path / "b", BEST_TABLE)
    }
    winner = by_id[best_rows[recall]["run_id"]]
    assert winner.data.metrics[recall] == metrics[f"best/{recall}"]
    assert best_rows[recall]["best"] == pytest.approx(metrics[f"best/{recall}"])
    for bound in ("ci_low", "ci_high"):
        assert metrics[f"best/{recall}.{bound}"] == winner.data.metrics[f"{recall}.{bound}"]
        assert best_rows[recall][bound] == pytest.approx(winner.data.metrics[f"{recall}.{bound}"])
    assert best_rows[recall]["job"] in {0, 1, 2, 3}
    assert not [t for t in tags if t.startswith("best/")]
    headline_winner = by_id[tags[BEST_RUN_TAG]]
    assert tags["heta_eval.headline_metric"] == "ndcg_at_10"
    assert headline_winner.data.metrics["ndcg_at_10"] == metrics["best/ndcg_at_10"]
    assert metrics["sweep.jobs_finished"] == 4 and metrics["sweep.jobs_failed"] == 0

    rows = _summary(root, parent.info.run_id, tmp_path / "dl")
    assert sorted(row["run_id"] for row in rows) == sorted(by_id)
    assert sorted(row["job"] for row in rows) == [0, 1, 2, 3]
    for row in rows:
        child = by_id[row["run_id"]]
        assert row["status"] == "FINISHED" and row["run_name"] == child.info.run_name
        assert row["overrides"] == child.data.tags["heta_eval.overrides"]
        assert str(row[table_column("recipe.chunk_size")]) == child.data.params["recipe.chunk_size"]
        assert row[table_column(recall)] == pytest.approx(child.data.metrics[recall])
        assert {table_column(m) for m in child.data.metrics} <= set(row)
    # The sweep ends with a table of its jobs and the command that compares them.
    assert "sweep: 4 job(s), 4 finished, 0 failed" in proc.stdout
    assert f"compare the jobs: heta-eval-compare {parent.info.run_id}" in proc.stdout


@pytest.mark.slow  # the parent is ended by atexit, at the sweep process's exit
def test_a_failing_job_ends_the_parent_failed_with_a_summary_of_what_finished(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    _with_documents(tmp_path)
    root = tmp_path / "outputs"
    # The failing job first: Hydra's basic launcher still runs the next one.
    proc = run_cli(
        "-m",
        "benchmark=jsonl",
        "benchmark.documents=missing.jsonl,a.jsonl",
        f"benchmark.cases={SAMPLE_DATA / 'cases.jsonl'}",
    )
    assert proc.returncode == 1, proc.stderr
    assert "file not found: missing.jsonl" in proc.stderr
    parents, children = _runs(root)
    (parent,) = parents
    (child,) = children  # the failing job stopped before its run started
    assert child.info.status == "FINISHED" and child.data.params["benchmark.documents"] == "a.jsonl"
    assert parent.info.status == "FAILED"
    assert parent.data.metrics["sweep.jobs_finished"] == 1
    assert parent.data.metrics["sweep.jobs_failed"] == 1
    recall = "bm25.evidence_recall_at_1"
    assert parent.data.metrics[f"best/{recall}"] == child.data.metrics[recall]
    assert parent.data.tags[BEST_RUN_TAG] == child.info.run_id
    # The jobs' table says which job failed, and why.
    job_table = proc.stdout[proc.stdout.index("sweep: 2 job(s), 1 finished, 1 failed") :]
    assert re.search(r"#0 .*missing\.jsonl.*FAILED: BenchmarkDataError", job_table)
    assert re.search(r"#1 .*a\.jsonl.* 0\.\d{4} .*FINISHED", job_table)

    rows = {row["status"]: row for row in _summary(root, parent.info.run_id, tmp_path / "dl")}
    assert set(rows) == {"FINISHED", "FAILED"}
    assert rows["FINISHED"]["run_id"] == child.info.run_id
    assert (
        rows["FAILED"]["run_id"] == ""
        and "benchmark.documents=missing.jsonl" in (rows["FAILED"]["overrides"])
    )
    assert "BenchmarkDataError" in rows["FAILED"]["error"]


@pytest.mark.slow  # joblib workers, and two sweep processes
def test_rerunning_a_failed_sweep_resumes_its_parent(run_cli: CliRunner, tmp_path: Path) -> None:
    _with_documents(tmp_path)
    root = tmp_path / "outputs"
    args = ("-m", "hydra/launcher=local_parallel", *FAILING_SWEEP)
    first = run_cli(*args)
    assert first.returncode == 1, first.stderr
    (parent,), _ = _runs(root)
    assert parent.info.status == "FAILED"
    sid = parent.data.tags["heta_eval.sweep_id"]
    first_dir = Path(parent.data.tags["heta_eval.sweep_dir"])

    shutil.copy(tmp_path / "a.jsonl", tmp_path / "missing.jsonl")  # fix the input
    second = run_cli(*args)
    assert second.returncode == 0, second.stderr
    parents, children = _runs(root)
    assert len(parents) == 1
    (resumed,) = parents
    assert resumed.info.run_id == parent.info.run_id
    assert resumed.data.tags["heta_eval.sweep_id"] == sid
    assert resumed.data.tags["heta_eval.sweep_attempts"] == "2"
    assert resumed.info.status == "FINISHED"
    second_dir = Path(resumed.data.tags["heta_eval.sweep_dir"])
    assert second_dir != first_dir
    assert (second_dir / PARENT_RUN_FILE).read_text() == parent.info.run_id
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in children)
    finished = {
        r.data.params["benchmark.documents"] for r in children if r.info.status == "FINISHED"
    }
    assert finished == {"a.jsonl", "missing.jsonl"}

    rows = _summary(root, parent.info.run_id, tmp_path / "dl")  # replaced, not appended
    assert len(rows) == 2 and all(row["status"] == "FINISHED" for row in rows)
    assert resumed.data.metrics["sweep.jobs_failed"] == 0


def _terminated_sweep(tmp_path: Path, *launcher: str) -> tuple[int, str]:
    """A sweep of three jobs (`runner.limit=3,10,10`) whose jobs hold after five cases:
    SIGTERM once the first job has finished and a later one holds (a state the sweep cannot
    leave); its exit status and stderr. Processes it leaves behind are killed."""
    root = tmp_path / "outputs"
    paused, gate = tmp_path / "paused", tmp_path / "gate"
    command = [sys.executable, "-m", "heta_eval", "-m", f"paths.root={root}", *launcher]
    command += ["runner.limit=3,10,10", "runner.max_concurrent_queries=1"]
    command += [pause_after(paused, gate, after=5)]
    err = tmp_path / "stderr.txt"
    with (
        err.open("w") as stderr,
        subprocess.Popen(
            command, cwd=tmp_path, env=cli_env(), stdout=subprocess.DEVNULL, stderr=stderr
        ) as proc,
    ):
        deadline = time.monotonic() + 240
        while not (paused.exists() and list(root.glob(f"multiruns/*/*/{JOBS_DIR}/*.json"))):
            assert proc.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        started = descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    kill_left_over(started)
    return proc.returncode, err.read_text()


@pytest.mark.slow  # a signal to a real sweep process (joblib workers)
def test_a_terminated_parallel_sweep_ends_its_runs_killed(tmp_path: Path) -> None:
    # SIGTERM (scancel, kill) would end Python without atexit; the callback turns it into an
    # exit that summarises and ends the parent, and ends the runs of killed local workers.
    status, stderr = _terminated_sweep(tmp_path, "hydra/launcher=local_parallel")
    assert status == 128 + signal.SIGTERM, stderr
    root = tmp_path / "outputs"
    (parent,), children = _runs(root)
    assert parent.info.status == "KILLED"
    assert children and all(r.info.status in {"FINISHED", "KILLED"} for r in children)
    assert 0 < parent.data.metrics["sweep.jobs_finished"] < 3
    assert SUMMARY_TABLE in {a.path for a in _client(root).list_artifacts(parent.info.run_id)}


@pytest.mark.slow  # a signal to a real sweep process
def test_a_terminated_sweep_leaves_its_finished_jobs_complete(tmp_path: Path) -> None:
    # The basic launcher: every job in the sweep's process, the second one held when the
    # signal comes. The finished job has its complete run; the held one ends KILLED, and
    # the parent KILLED with the summary of what finished.
    status, stderr = _terminated_sweep(tmp_path)
    assert status == 128 + signal.SIGTERM, stderr
    root = tmp_path / "outputs"
    client = _client(root)
    (parent,), children = _runs(root)
    by_job = {int(r.data.tags["heta_eval.sweep_job"]): r for r in children}
    assert sorted(by_job) == [0, 1]  # the third job never started
    assert by_job[0].info.status == "FINISHED" and by_job[1].info.status == "KILLED"
    files = {a.path for a in client.list_artifacts(by_job[0].info.run_id)}
    assert {"report.json", "report.html", "config.resolved.yaml", "case_results.json"} <= files
    assert parent.info.status == "KILLED"
    assert parent.data.metrics["sweep.jobs_finished"] == 1
    sweep_dir = Path(parent.data.tags["heta_eval.sweep_dir"])
    assert read_record(sweep_dir).status == "KILLED"  # type: ignore[union-attr]
    assert read_record(sweep_dir / "1").status == "KILLED"  # type: ignore[union-attr]


@pytest.mark.slow  # submitit runs each job in a process of its own
def test_submitit_local_runs_the_sweep_in_submitit_jobs(run_cli: CliRunner, tmp_path: Path) -> None:
    # submitit_local is SLURM's code path (pickled job, job folder, results) without a cluster.
    proc = run_cli("-m", "hydra/launcher=submitit_local", "recipe.chunk_size=16,32")
    assert proc.returncode == 0, proc.stderr
    (parent,), children = _runs(tmp_path / "outputs")
    why = proc.stdout + proc.stderr + job_logs(tmp_path / "outputs")
    assert parent.info.status == "FINISHED", why
    assert parent.data.params["sweep.launcher"] == "submitit_local"
    assert len(children) == 2 and all(r.info.status == "FINISHED" for r in children), why
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in children)
    assert (Path(parent.data.tags["heta_eval.sweep_dir"]) / ".submitit").is_dir()
