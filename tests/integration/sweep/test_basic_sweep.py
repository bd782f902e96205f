"""A sweep with Hydra's basic launcher, in this process (the `cli` fixture): every job's run
is complete before the next job starts (report.json, report.html, the resolved config and the
case table in MLflow, its run directory synced), the sweep's own directory records its parent
run, a later job of an identity an earlier job evaluated reuses that result, and a job reads
its benchmark and config files as they are when it starts."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from heta_eval.benchmarks.sample import SAMPLE_DATA
from heta_eval.tracking.projection import CASE_TABLE

from ...conftest import InProcessCli, job_logs
from ...tracking_readback import all_runs, record_of

pytestmark = pytest.mark.slow  # sweeps of two or three evaluations each


def _children(root: Path) -> list[Any]:
    runs = all_runs(f"sqlite:///{root / 'mlflow.db'}")
    return sorted(
        (r for r in runs if "mlflow.parentRunId" in r.data.tags),
        key=lambda r: int(r.data.tags["heta_eval.sweep_job"]),
    )


def _reports(root: Path) -> list[dict[str, Any]]:
    found = sorted(root.glob("multiruns/*/*/*/report.json"), key=lambda p: int(p.parent.name))
    return [json.loads(p.read_text()) for p in found]


def test_every_job_is_complete_and_its_directory_synced(cli: InProcessCli, tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    done = cli("-m", "runner.limit=6", "runner.top_k=5,10,20")
    assert done.returncode == 0, done.stderr + job_logs(root)
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    children = _children(root)
    assert [r.data.params["runner.top_k"] for r in children] == ["5", "10", "20"]
    (parent_id,) = {r.data.tags["mlflow.parentRunId"] for r in children}
    for run in children:
        assert run.info.status == "FINISHED"
        assert "bm25.ndcg_at_10" in run.data.metrics and "cases.evaluated" in run.data.metrics
        files = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"report.json", "report.html", "config.resolved.yaml", CASE_TABLE} <= files
        run_dir = Path(run.data.tags["heta_eval.run_dir"])
        with tempfile.TemporaryDirectory() as out:
            logged = client.download_artifacts(run.info.run_id, "report.json", out)
            assert Path(logged).read_bytes() == (run_dir / "report.json").read_bytes()
        page = (run_dir / "report.html").read_text(encoding="utf-8")
        assert "<img" in page and "data:image/png;base64," in page
        assert f"html report: {run_dir}/report.html" in done.stdout
        record = record_of(run_dir)
        assert record.synced and record.run_id == run.info.run_id
        assert record.sweep_dir == str(run_dir.parent)
    sweep = record_of(run_dir.parent)
    assert sweep.kind == "sweep" and sweep.synced and sweep.status == "FINISHED"
    assert sweep.run_id == parent_id
    assert client.get_run(parent_id).info.status == "FINISHED"
    # Each job's completion is recorded with its MLflow run.
    markers = [json.loads(p.read_text()) for p in (root / "state").glob("*/done.json")]
    assert sorted(m["tracking_run_id"] for m in markers) == sorted(r.info.run_id for r in children)
    assert "sweep: 3 job(s), 3 finished, 0 failed" in done.stdout


def test_a_later_job_of_the_same_identity_reuses_the_earlier_one(
    cli: InProcessCli, tmp_path: Path
) -> None:
    # runner.progress is outside the run's identity: job 1 finds job 0's result.
    done = cli("-m", "runner.limit=6", "runner.progress=off,lines")
    assert done.returncode == 0, done.stderr
    first, second = _children(tmp_path / "outputs")
    assert first.info.status == second.info.status == "FINISHED"
    assert "heta_eval.reused_from.run_id" not in first.data.tags
    assert second.data.tags["heta_eval.reused_from.run_id"] == first.info.run_id
    assert second.data.metrics["bm25.ndcg_at_10"] == first.data.metrics["bm25.ndcg_at_10"]
    assert "reusing that result" in done.stdout + done.stderr


def test_each_job_reads_its_files_as_they_are_when_it_starts(
    cli: InProcessCli, tmp_path: Path
) -> None:
    documents, cases = tmp_path / "documents.jsonl", tmp_path / "cases.jsonl"
    shutil.copy(SAMPLE_DATA / "documents.jsonl", documents)
    shutil.copy(SAMPLE_DATA / "cases.jsonl", cases)
    recipe = tmp_path / "conf" / "recipe" / "mine.yaml"
    recipe.parent.mkdir(parents=True)
    recipe.write_text("defaults:\n  - bm25\n  - _self_\n\nchunk_size: 64\n")
    an_hour_ago = time.time() - 3600  # as files that have not changed for a while
    for path in (documents, cases, recipe):
        os.utime(path, (an_hour_ago, an_hour_ago))
    # After job 0, the cases file loses its last case; after job 1, the recipe changes.
    drop, edit = "+hydra.callbacks.drop_case", "+hydra.callbacks.edit_recipe"
    callbacks = "tests.integration.sweep.job_callbacks"
    done = cli(
        "-m",
        f"--config-dir={tmp_path / 'conf'}",
        "benchmark=jsonl",
        f"benchmark.documents={documents}",
        f"benchmark.cases={cases}",
        "recipe=mine",
        "runner.top_k=1,3,5",
        f"{drop}._target_={callbacks}.DropLastLineAfterJob",
        f"{drop}.path={cases}",
        f"{drop}.job=0",
        f"{edit}._target_={callbacks}.ReplaceTextAfterJob",
        f"{edit}.path={recipe}",
        f"{edit}.job=1",
        f"{edit}.old='chunk_size: 64'",
        f"{edit}.new='chunk_size: 32'",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    first, second, third = _reports(tmp_path / "outputs")
    assert [r["run"]["cases"]["total"] for r in (first, second, third)] == [48, 47, 47]
    assert second["run"]["identity"]["data"] != first["run"]["identity"]["data"]
    assert [r["recipe_manifest"]["chunk_size"] for r in (first, second, third)] == [64, 64, 32]
