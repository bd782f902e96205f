"""The `heta-eval` command in this process: the default run's scores and everything it
logged to a real MLflow store (read back with MlflowClient), a sweep grouped under a parent
run, user JSON Lines files without tracking, and `--help`."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from heta_eval.benchmarks.sample import SAMPLE_DATA
from heta_eval.records import EvaluationReport

from ...cli_in_process import ENTRY_POINTS, call_cli
from ...conftest import REPO, InProcessCli
from ..conftest import SharedRun
from ..runs import mlflow_client, printed_report, tracked_runs


def test_default_run_prints_scores_and_logs_everything_to_mlflow(
    sample_run: SharedRun, tmp_path: Path
) -> None:
    out, report, run, root = (
        sample_run.cli.stdout,
        sample_run.report,
        sample_run.tracked,
        sample_run.root,
    )
    assert "evidence_recall@1" in out and "48 case results (0 failed)" in out
    assert run is not None
    client = mlflow_client(root)
    experiment = client.get_experiment_by_name("heta_eval")
    assert experiment.artifact_location == (root / "mlruns").as_uri()
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
def test_multirun_groups_jobs_under_a_parent_run(cli: InProcessCli, tmp_path: Path) -> None:
    proc = cli("-m", "recipe.chunk_size=16,32")
    assert proc.returncode == 0, proc.stderr
    runs = tracked_runs(tmp_path / "outputs")
    parents = [r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and len(children) == 2
    assert all(r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for r in children)
    assert sorted(r.data.params["recipe.chunk_size"] for r in children) == ["16", "32"]
    assert len({r.data.tags["heta_eval.config_hash"] for r in children}) == 2
    assert all(r.info.status == "FINISHED" for r in runs)


def test_user_jsonl_files_in_the_units_shape_without_tracking(
    cli: InProcessCli, tmp_path: Path
) -> None:
    proc = cli(
        "benchmark=jsonl",
        f"benchmark.documents={SAMPLE_DATA / 'documents.jsonl'}",
        f"benchmark.cases={SAMPLE_DATA / 'cases.jsonl'}",
        "benchmark.name=mine",
        "benchmark.build_scope=case",
        "runner.limit=20",
        "tracking=none",
    )
    assert proc.returncode == 0, proc.stderr
    report = printed_report(proc.stdout)
    assert report.benchmark.name == "mine" and len(report.case_results) == 20
    assert len(report.knowledge_base_manifests) == 4  # the 20 cases are spread over all units
    assert not (tmp_path / "outputs" / "mlflow.db").exists()
    assert (tmp_path / "outputs" / "store" / "raw" / "benchmarks" / "mine" / "test").is_dir()


def test_help_lists_the_config_groups(cli: InProcessCli) -> None:
    proc = cli("--help")
    assert proc.returncode == 0
    for group in ("benchmark:", "recipe:", "evaluator:", "runner:", "tracking:"):
        assert group in proc.stdout


def test_the_console_scripts_called_here_are_the_declared_ones() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == ENTRY_POINTS


def test_a_sweep_under_the_default_root_checks_every_job_before_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # No paths.root: the default, `${hydra:runtime.cwd}/outputs`, resolved before any job ran.
    args = ["-m", "recipe.chunk_size=16,-3", "tracking=none"]
    result = call_cli("heta-eval", args, cwd=tmp_path, monkeypatch=monkeypatch, capsys=capsys)
    assert result.returncode == 2, result.stderr
    assert "invalid configuration of sweep job 1 of 2 (recipe.chunk_size=-3" in result.stderr
    assert not list(tmp_path.rglob("report.json"))
