"""A sweep's jobs in one process read their benchmark once while its files stay unchanged
(heta_eval/run/sweep_loads.py): a later job reuses the documents and cases an earlier job
read, says so (log line, report, MLflow tags) and scores exactly as a run that reads them;
a file changed between two jobs is read again. Real `python -m heta_eval` processes on
copies of the bundled sample benchmark, the MLflow store read back with MlflowClient."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from heta_eval.run.file_reads import watch_reads
from heta_eval.run.sweep_loads import LOAD_TAG, REUSED_FROM_JOB_TAG
from mlflow import MlflowClient

from heta_eval.benchmarks.sample import SAMPLE_DATA

from .conftest import job_logs, user_env


def _heta_eval(tmp_path: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    flags = [a for a in args if a.startswith("-") and not a.startswith("+")]
    overrides = [a for a in args if a not in flags]
    command = [sys.executable, "-m", "heta_eval", *flags, f"paths.root={root}", *overrides]
    env = user_env(PYTHONWARNINGS="ignore::DeprecationWarning")
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr + job_logs(root)
    return done


def _reports(root: Path) -> list[dict[str, Any]]:
    found = sorted(root.glob("multiruns/*/*/*/report.json"), key=lambda p: int(p.parent.name))
    return [json.loads(p.read_text()) for p in found]


@pytest.mark.slow
def test_a_sweep_reuses_its_benchmark_until_a_file_changes(tmp_path: Path) -> None:
    documents, cases = tmp_path / "documents.jsonl", tmp_path / "cases.jsonl"
    shutil.copy(SAMPLE_DATA / "documents.jsonl", documents)
    shutil.copy(SAMPLE_DATA / "cases.jsonl", cases)
    an_hour_ago = time.time() - 3600  # files written just now are not trusted unchanged
    for path in (documents, cases):
        os.utime(path, (an_hour_ago, an_hour_ago))
    data = ["benchmark=jsonl", f"benchmark.documents={documents}", f"benchmark.cases={cases}"]

    # Without reuse: a single run reads the benchmark.
    single_root = tmp_path / "single"
    _heta_eval(tmp_path, single_root, *data, "runner.top_k=3")
    (single,) = single_root.glob("runs/*/*/report.json")
    single_report = json.loads(single.read_text())
    assert single_report["run"]["benchmark_load_reused"] is None

    # Job 0 reads, job 1 reuses, the cases file loses its last case, job 2 reads again.
    root = tmp_path / "sweep"
    change = "+hydra.callbacks.change_cases"
    done = _heta_eval(
        tmp_path,
        root,
        "-m",
        *data,
        "runner.top_k=1,3,5",
        f"{change}._target_=tests.sweep_callbacks.DropLastLineAfterJob",
        f"{change}.path={cases}",
        f"{change}.job=1",
    )
    output = done.stdout + done.stderr
    assert "reusing the documents and cases sweep job #0 read" in output
    assert f"{cases} changed since sweep job #0 read it; reading the benchmark again" in output

    first, reused, after = _reports(root)
    assert first["run"]["benchmark_load_reused"] is None
    assert reused["run"]["benchmark_load_reused"]["job"] == 0
    assert reused["run"]["benchmark_load_reused"]["files_checked"] >= 2
    assert after["run"]["benchmark_load_reused"] is None
    assert reused["run"]["identity"]["data"] == first["run"]["identity"]["data"]
    assert reused["run"]["identity"]["data"] == single_report["run"]["identity"]["data"]
    assert after["run"]["identity"]["data"] != first["run"]["identity"]["data"]
    assert [r["run"]["cases"]["total"] for r in (first, reused, after)] == [48, 48, 47]
    # The reused load scores exactly as the single run that read the files.
    assert reused["score_summary"] == single_report["score_summary"]
    assert reused["score_details"] == single_report["score_details"]

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("heta_eval")
    runs = sorted(
        (
            r
            for r in client.search_runs([experiment.experiment_id])
            if "mlflow.parentRunId" in r.data.tags
        ),
        key=lambda r: int(r.data.tags["heta_eval.sweep_job"]),
    )
    assert [r.data.tags[LOAD_TAG] for r in runs] == ["read", "reused", "read"]
    assert [r.data.tags.get(REUSED_FROM_JOB_TAG) for r in runs] == [None, "0", None]
    single_client = MlflowClient(tracking_uri=f"sqlite:///{single_root / 'mlflow.db'}")
    (single_run,) = single_client.search_runs(
        [single_client.get_experiment_by_name("heta_eval").experiment_id]
    )
    assert LOAD_TAG not in single_run.data.tags
    scores = {
        k: v
        for k, v in single_run.data.metrics.items()
        if k.startswith("bm25.") and "latency" not in k  # latencies are measured, not scored
    }
    assert scores and {k: runs[1].data.metrics[k] for k in scores} == scores


def test_reads_are_recorded_and_a_change_is_seen(tmp_path: Path) -> None:
    data, listed = tmp_path / "data.txt", tmp_path / "listed"
    data.write_text("one\n")
    listed.mkdir()
    old = time.time() - 3600
    os.utime(data, (old, old))
    os.utime(listed, (old, old))
    (tmp_path / "written.txt").write_text("ignored")
    with watch_reads() as reads:
        data.read_text()
        list(listed.iterdir())
        (tmp_path / "output.txt").write_text("a write is not a read")
        (tmp_path / "absent.txt").exists()
    assert set(reads.signatures) == {str(data), str(listed)}
    assert reads.unverifiable is None
    assert reads.changed() is None
    (listed / "new").write_text("")  # a file appears in a listed directory
    assert reads.changed() == str(listed)

    with watch_reads() as fresh:
        data.read_text()
    data.write_text("two\n")  # same size, modified just now
    assert fresh.changed() == str(data)

    with watch_reads() as racy:
        data.read_text()  # modified less than RACY_SECONDS ago: not trusted unchanged later
    assert racy.unverifiable is not None and str(data) in racy.unverifiable

    with watch_reads() as networked:
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert networked.unverifiable is not None and "subprocess" in networked.unverifiable


@pytest.mark.slow
def test_a_config_file_changed_between_jobs_is_composed_again(tmp_path: Path) -> None:
    # The launcher takes the sweeper's composition of a job only while its files are
    # unchanged: the recipe's chunk_size edited after job 0 is what jobs 1 and 2 run with.
    recipe = tmp_path / "conf" / "recipe" / "mine.yaml"
    recipe.parent.mkdir(parents=True)
    recipe.write_text("defaults:\n  - bm25\n  - _self_\n\nchunk_size: 64\n")
    an_hour_ago = time.time() - 3600
    os.utime(recipe, (an_hour_ago, an_hour_ago))
    root = tmp_path / "sweep"
    edit = "+hydra.callbacks.edit_recipe"
    _heta_eval(
        tmp_path,
        root,
        "-m",
        f"--config-dir={tmp_path / 'conf'}",
        "recipe=mine",
        "runner.top_k=3,5,8",
        f"{edit}._target_=tests.sweep_callbacks.ReplaceTextAfterJob",
        f"{edit}.path={recipe}",
        f"{edit}.job=0",
        f"{edit}.old='chunk_size: 64'",
        f"{edit}.new='chunk_size: 32'",
    )
    reports = _reports(root)
    assert [r["recipe_manifest"]["chunk_size"] for r in reports] == [64, 32, 32]


@pytest.mark.slow
def test_jobs_of_another_benchmark_configuration_read_their_own(tmp_path: Path) -> None:
    documents, full, fewer = (tmp_path / n for n in ("d.jsonl", "full.jsonl", "fewer.jsonl"))
    shutil.copy(SAMPLE_DATA / "documents.jsonl", documents)
    shutil.copy(SAMPLE_DATA / "cases.jsonl", full)
    fewer.write_text("".join(full.read_text().splitlines(keepends=True)[:-1]))
    an_hour_ago = time.time() - 3600
    for path in (documents, full, fewer):
        os.utime(path, (an_hour_ago, an_hour_ago))
    root = tmp_path / "sweep"
    cases = f"benchmark.cases={full},{fewer},{fewer}"
    _heta_eval(tmp_path, root, "-m", "benchmark=jsonl", f"benchmark.documents={documents}", cases)
    reports = _reports(root)
    assert [r["run"]["cases"]["total"] for r in reports] == [48, 47, 47]
    loads = [r["run"]["benchmark_load_reused"] for r in reports]
    assert loads[:2] == [None, None] and loads[2]["job"] == 1
