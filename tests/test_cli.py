"""The `heta-eval` command end to end: real subprocesses, a real MLflow store read back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval.benchmarks.sample import SAMPLE_DATA
from heta_eval.records import EvaluationReport

from .conftest import SHARED, CliRunner, user_env


def _client(root: Path) -> MlflowClient:
    return MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")


def _report_path(stdout: str) -> Path:
    line = next(line for line in stdout.splitlines() if line.startswith("report: "))
    return Path(line.removeprefix("report: "))


@pytest.mark.slow
def test_default_run_prints_scores_and_logs_everything_to_mlflow(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    proc = run_cli()
    assert proc.returncode == 0, proc.stderr
    assert "evidence_recall@1" in proc.stdout and "48 case results (0 failed)" in proc.stdout
    report = EvaluationReport.read_json(_report_path(proc.stdout))
    root = tmp_path / "outputs"

    client = _client(root)
    experiment = client.get_experiment_by_name("heta_eval")
    assert experiment.artifact_location == (root / "mlruns").as_uri()
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_name == "sample/bm25"
    params, metrics, tags = run.data.params, run.data.metrics, run.data.tags
    assert params["recipe.name"] == "bm25" and params["runner.top_k"] == "null"
    assert report.run.top_k == 10  # the sample benchmark's default depth
    assert params["recipe.indexes.bm25.k1"] == "1.5" and params["recipe.chunk_size"] == "null"
    for key, value in report.score_summary.items():
        safe = key.replace("@", "_at_")
        assert metrics[safe] == pytest.approx(value)
    assert metrics["bm25.evidence_recall_at_5.scored"] == 48
    assert set(report.score_slices) >= {"difficulty=easy", "difficulty=hard"}
    hard = report.score_slices["difficulty=hard"]["bm25.evidence_recall@1"]
    assert metrics["slice/difficulty/hard/bm25.evidence_recall_at_1"] == pytest.approx(hard)
    # The 48 BM25 queries retrieved in one call: a mean per query, no percentiles.
    assert {"kb.build_seconds", "bm25.latency_mean_batched_seconds"} <= set(metrics)
    assert metrics["bm25.latency_batch_size"] == 48
    assert "bm25.latency_p50_seconds" not in metrics
    assert tags["benchmark.name"] == "sample" and tags["benchmark.split"] == "test"
    assert tags["recipe.name"] == "bm25" and len(tags["heta_eval.config_hash"]) == 16
    assert tags["heta_eval.version"]

    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"report.json", "config.resolved.yaml", "case_results.json"} <= artifacts
    table = json.loads(
        Path(
            client.download_artifacts(run.info.run_id, "case_results.json", str(tmp_path))
        ).read_text()
    )
    columns = table["columns"]
    assert {
        "case_id",
        "unit_id",
        "query_mode",
        "evidence_recall@5",
        "latency_seconds",
        "latency_batch_size",
        "error",
    } <= set(columns)
    assert len(table["data"]) == 48
    logged = EvaluationReport.model_validate_json(
        Path(
            client.download_artifacts(run.info.run_id, "report.json", str(tmp_path / "dl"))
        ).read_text()
    )
    assert logged == report


@pytest.mark.slow
def test_multirun_groups_jobs_under_a_parent_run(run_cli: CliRunner, tmp_path: Path) -> None:
    proc = run_cli("-m", "recipe.chunk_size=16,32")
    assert proc.returncode == 0, proc.stderr
    client = _client(tmp_path / "outputs")
    runs = client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])
    parents = [r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and len(children) == 2
    assert all(r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for r in children)
    assert sorted(r.data.params["recipe.chunk_size"] for r in children) == ["16", "32"]
    assert len({r.data.tags["heta_eval.config_hash"] for r in children}) == 2
    assert all(r.info.status == "FINISHED" for r in runs)


def test_user_jsonl_files_in_the_units_shape_without_tracking(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    proc = run_cli(
        "benchmark=jsonl",
        f"benchmark.documents={SAMPLE_DATA / 'documents.jsonl'}",
        f"benchmark.cases={SAMPLE_DATA / 'cases.jsonl'}",
        "benchmark.name=mine",
        "benchmark.build_scope=case",
        "runner.limit=20",
        "tracking=none",
    )
    assert proc.returncode == 0, proc.stderr
    report = EvaluationReport.read_json(_report_path(proc.stdout))
    assert report.benchmark.name == "mine" and len(report.case_results) == 20
    assert len(report.knowledge_base_manifests) == 4  # the 20 cases are spread over all units
    assert not (tmp_path / "outputs" / "mlflow.db").exists()
    assert (tmp_path / "outputs" / "store" / "raw" / "benchmarks" / "mine" / "test").is_dir()


def test_importing_the_cli_loads_no_mlflow_or_index_code() -> None:
    heavy = "{'mlflow', 'bm25s', 'pandas', 'httpx', 'matplotlib', 'pypdf'}"
    code = f"import sys, heta_eval.cli; print(sorted({heavy} & set(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_help_lists_the_config_groups(run_cli: CliRunner) -> None:
    proc = run_cli("--help")
    assert proc.returncode == 0
    for group in ("benchmark:", "recipe:", "evaluator:", "runner:", "tracking:"):
        assert group in proc.stdout


@pytest.mark.slow
def test_prepare_lists_resources_and_verifies_local_data(tmp_path: Path) -> None:
    def prepare(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "heta_eval.cli.prepare", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env=user_env(HETA_EVAL_CACHE=str(tmp_path / "cache")),
        )

    listing = prepare("--list")
    assert listing.returncode == 0, listing.stderr
    assert (
        "beir: scifact.zip" in listing.stdout
        and "uda: bench_fin_qa.json (sha256 8e0236" in listing.stdout
    )
    scifact = SHARED / "datasets" / "beir" / "scifact"
    local = prepare("benchmark=beir", f"benchmark.data_root={scifact}")
    assert local.returncode == 0, local.stderr
    assert f"qrels: {scifact / 'qrels' / 'test.tsv'}" in local.stdout
    offline = prepare("benchmark=beir", "runner.offline=true")
    assert offline.returncode == 1
    assert "offline" in offline.stderr and "benchmark.data_root" in offline.stderr
    assert not (tmp_path / "cache" / "beir" / "scifact.zip").exists()
