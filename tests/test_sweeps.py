"""Sweeps end to end: launchers, the MLflow parent run's lifecycle, summary and Optuna search.

Real `python -m heta_eval -m ...` subprocesses on the bundled sample benchmark; the MLflow
store they write is read back with MlflowClient.
"""

from __future__ import annotations

import json
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mlflow import MlflowClient

from heta_eval.benchmarks.sample import SAMPLE_DATA
from heta_eval.results.sweep_rows import (
    JOBS_DIR,
    SweepRow,
    best_scores,
    differing_overrides,
    headline,
    job_rows,
    merge_job_records,
    score_means,
)
from heta_eval.sweep.callback import (
    BEST_RUN_TAG,
    BEST_TABLE,
    PARENT_RUN_FILE,
    SUMMARY_TABLE,
    SWEEP_ID_FILE,
    MlflowSweepCallback,
    sweep_id,
)
from heta_eval.tracking.naming import table_column

from .conftest import CliRunner, job_logs, user_env

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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_terminated_sweep_ends_its_runs_killed(tmp_path: Path) -> None:
    # SIGTERM (scancel, kill) would end Python without atexit; the callback turns it into an
    # exit that summarises and ends the parent, and ends the runs of killed local workers.
    root = tmp_path / "outputs"
    env = user_env()
    env["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    command = [sys.executable, "-m", "heta_eval", "-m", f"paths.root={root}"]
    # 12 jobs, 2 at a time: the kill comes after the first job, long before the last. (Every
    # job is composed and checked before the first starts: 99 jobs cost 30 s more for nothing.)
    command += ["hydra/launcher=local_parallel", "recipe.chunk_size=range(8,104,8)"]
    with subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        deadline = time.monotonic() + 120
        while not list(root.glob(f"multiruns/*/*/{JOBS_DIR}/*.json")):
            assert proc.poll() is None and time.monotonic() < deadline, "no job finished"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    (parent,), children = _runs(root)
    assert parent.info.status == "KILLED"
    assert children and all(r.info.status in {"FINISHED", "KILLED"} for r in children)
    assert 0 < parent.data.metrics["sweep.jobs_finished"] < 12
    assert SUMMARY_TABLE in {a.path for a in _client(root).list_artifacts(parent.info.run_id)}


@pytest.mark.slow
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


# -- the pieces, without a sweep -----------------------------------------------------------


def test_sweep_id_is_stable_and_order_free() -> None:
    a = sweep_id(["recipe.chunk_size=16,32", "runner.top_k=5"], "config")
    assert a == sweep_id(["runner.top_k=5", "recipe.chunk_size=16,32"], "config")
    assert len(a) == 16 and a != sweep_id(["recipe.chunk_size=16,32"], "config")
    assert a != sweep_id(["recipe.chunk_size=16,32", "runner.top_k=5"], "other")


def test_best_is_only_for_score_means_with_their_own_ci() -> None:
    def row(run_id: str, status: str, job: int, ndcg: float, low: float) -> SweepRow:
        metrics = {
            "bm25.ndcg_at_10": ndcg,
            "ndcg_at_10": ndcg,
            "ndcg_at_10.ci_low": low,
            "ndcg_at_10.ci_high": 1.0,
            **{f"bm25.ndcg_at_10.{stat}": 1.0 for stat in ("std", "ci_low", "ci_high")},
            "bm25.ndcg_at_10.scored": 48,
            "bm25.ndcg_at_10.skipped": 2,
            "bm25.latency_p50_seconds": 0.01 * job,
            "latency_p50_seconds": 0.01 * job,
            "slice/difficulty/easy/bm25.ndcg_at_10": 1.0,
            "kb.chunks": 100.0 * job,
            "cache.response_misses": 48.0,
            "cases.failed": 0.0,
        }
        tags = {"heta_eval.primary_query_mode": "bm25"}
        return SweepRow(run_id, run_id, status, f"x={job}", metrics=metrics, tags=tags, job=job)

    rows = [
        row("r0", "FINISHED", 0, 0.5, 0.2),
        row("r1", "FINISHED", 1, 0.7, 0.6),
        row("r2", "FINISHED", 2, 0.7, 0.1),  # a tie: the earlier job wins
        row("r3", "FAILED", 3, 0.9, 0.8),  # not finished: never best
    ]
    assert score_means(rows[0]) == ["ndcg_at_10", "bm25.ndcg_at_10"]
    best = {b.metric: b for b in best_scores(rows)}
    assert set(best) == {"ndcg_at_10", "bm25.ndcg_at_10"}
    assert (best["ndcg_at_10"].value, best["ndcg_at_10"].row.run_id) == (0.7, "r1")
    # Its own run's bounds, not the largest ci_low of any run (r3's 0.8, r0's 0.2).
    assert (best["ndcg_at_10"].ci_low, best["ndcg_at_10"].ci_high) == (0.6, 1.0)
    assert headline(rows) == "ndcg_at_10"  # nDCG@10 where there is one
    assert headline(rows, "bm25.ndcg@10") == "bm25.ndcg_at_10"  # the search's objective
    assert differing_overrides(rows) == ["x"]


def _run(run_id: str, status: str, overrides: str, start: int) -> SimpleNamespace:
    return SimpleNamespace(
        info=SimpleNamespace(run_id=run_id, run_name=run_id, status=status, start_time=start),
        data=SimpleNamespace(metrics={"m": 1.0}, tags={"heta_eval.overrides": overrides}),
    )


def test_a_rerun_job_counts_once_by_its_latest_finished_run() -> None:
    rows = job_rows(
        [
            _run("old-fail", "FAILED", "x=1", 1),
            _run("ok", "FINISHED", "x=2", 2),
            _run("new-ok", "FINISHED", "x=1", 3),
            _run("still-failing", "FAILED", "x=3", 4),
            _run("fails-again", "FAILED", "x=3", 5),
        ]
    )
    assert [(r.run_id, r.status, r.attempts) for r in rows] == [
        ("ok", "FINISHED", 1),
        ("new-ok", "FINISHED", 2),
        ("fails-again", "FAILED", 2),
    ]


def test_failed_jobs_without_a_run_get_a_row_and_rows_their_job_numbers() -> None:
    rows = [SweepRow("r1", "a", "FINISHED", "x=1"), SweepRow("r2", "b", "FAILED", "x=2")]
    merge_job_records(
        rows,
        [
            {"num": 0, "status": "COMPLETED", "overrides": ["x=1"], "error": None},
            {"num": 1, "status": "FAILED", "overrides": ["x=2"], "error": "E: two"},
            {"num": 2, "status": "FAILED", "overrides": ["x=3"], "error": "E: three"},
        ],
    )
    assert [(r.job, r.run_id, r.status, r.error) for r in rows] == [
        (0, "r1", "FINISHED", None),
        (1, "r2", "FAILED", "E: two"),
        (2, "", "FAILED", "E: three"),
    ]
    assert [r.label for r in rows] == ["#0", "#1", "#2"]


def test_the_callback_ships_to_workers_without_its_client() -> None:
    callback = MlflowSweepCallback()
    callback._tracker = SimpleNamespace(client=lambda: None)  # not picklable
    callback._armed = True
    copy = pickle.loads(pickle.dumps(callback))
    assert copy._tracker is None and copy._armed is False
