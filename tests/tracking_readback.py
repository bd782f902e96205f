"""Reading an MLflow store back with MlflowClient, as a user would, to compare it with the run
directories that are its source of truth (`tracking.json`, report.json and the files
beside it)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from mlflow import MlflowClient

from heta_eval.cli.sync import main as sync_main
from heta_eval.records import EvaluationReport
from heta_eval.tracking.naming import PRIMARY_MODE_TAG, logged_params, metric_name, run_params
from heta_eval.tracking.projection import CASE_TABLE, case_table, report_metrics
from heta_eval.tracking.run_record import TrackingRecord, read_record

from .cli_in_process import CliResult

PARENT_TAG = "mlflow.parentRunId"
RUN_DIR_TAG = "heta_eval.run_dir"


def all_runs(uri: str) -> list[Any]:
    """Every run of every experiment in the store at `uri`, oldest first."""
    client = MlflowClient(tracking_uri=uri)
    experiments = [e.experiment_id for e in client.search_experiments()]
    if not experiments:
        return []
    return client.search_runs(experiments, order_by=["attributes.start_time ASC"])


def record_of(run_dir: Path) -> TrackingRecord:
    """The run directory's `tracking.json` (it must have one)."""
    record = read_record(run_dir)
    assert record is not None, f"no tracking.json in {run_dir}"
    return record


def artifact_paths(client: MlflowClient, run_id: str, path: str | None = None) -> list[str]:
    """Every artifact file of the run, recursively, sorted."""
    found = []
    for item in client.list_artifacts(run_id, path):
        found += artifact_paths(client, run_id, item.path) if item.is_dir else [item.path]
    return sorted(found)


def snapshot(client: MlflowClient, run: Any) -> dict[str, Any]:
    """What a user sees of a run, keyed for comparison between stores: name, status,
    params, metrics, tags (MLflow's own bookkeeping tags and the parent's id aside: another
    store gives the parent another id) and the artifact files."""
    own = ("mlflow.log-model", "mlflow.runName")
    tags = {k: v for k, v in run.data.tags.items() if k != PARENT_TAG and not k.startswith(own)}
    return {
        "name": run.info.run_name,
        "status": run.info.status,
        "start_time": run.info.start_time,
        "params": dict(run.data.params),
        "metrics": dict(run.data.metrics),
        "tags": tags,
        "artifacts": artifact_paths(client, run.info.run_id),
    }


def assert_run_matches_directory(client: MlflowClient, run_id: str, run_dir: Path) -> None:
    """The MLflow run holds exactly what its run directory says: params, tags, every metric
    (each once), the case table, report.json and the resolved configuration, FINISHED."""
    report = EvaluationReport.read_json(run_dir / "report.json")
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    resolved = yaml.safe_load((run_dir / "config.resolved.yaml").read_text())
    assert run.data.params == logged_params(resolved)[0] | run_params(report)
    assert run.data.params == record_of(run_dir).params | run_params(report)
    tags = run.data.tags
    assert tags[PRIMARY_MODE_TAG] == report.primary_query_mode
    assert tags["benchmark.name"] == report.benchmark.name
    assert tags["recipe.name"] == report.recipe_manifest["name"]
    assert tags[RUN_DIR_TAG] == str(run_dir)
    assert len(tags["heta_eval.config_hash"]) == 16
    for key, value in report.score_summary.items():
        assert run.data.metrics[metric_name(key)] == pytest.approx(value)
    expected = {key: value for key, value, _step in report_metrics(report)}
    assert run.data.metrics == pytest.approx(expected)
    for key in expected:  # each metric once: a repeated replay added nothing
        steps = [m.step for m in client.get_metric_history(run_id, key)]
        assert len(steps) == len(set(steps)), key
    with tempfile.TemporaryDirectory() as out:
        table = json.loads(Path(client.download_artifacts(run_id, CASE_TABLE, out)).read_text())
        columns = case_table(report)
        assert table["columns"] == list(columns)
        assert [row[0] for row in table["data"]] == columns["case_id"]
        logged = Path(client.download_artifacts(run_id, "report.json", out))
        assert logged.read_bytes() == (run_dir / "report.json").read_bytes()
        config = Path(client.download_artifacts(run_id, "config.resolved.yaml", out))
        assert config.read_text() == (run_dir / "config.resolved.yaml").read_text()
    assert set(artifact_paths(client, run_id)) == {
        CASE_TABLE,
        "config.resolved.yaml",
        "report.html",
        "report.json",
    }


def heta_eval_sync(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    """`heta-eval-sync ARGS` in this process: its exit status and what it printed."""
    capsys.readouterr()
    code = sync_main(list(args))
    out = capsys.readouterr()
    return CliResult(code, out.out, out.err)
