"""A tracked run writes its run directory first and projects it into MLflow at its end, in
its own process: `tracking.json` names the MLflow run and says it is synced, and the run
holds exactly what the directory holds (params, tags, metrics, case table, files). A run
over its failure rate ends FAILED in MLflow with its report logged; a secret in the
configuration is masked in the record as in MLflow. `heta_eval.evaluate` in this process."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval import evaluate
from heta_eval.run.failures import FailureRateExceededError
from heta_eval.run.state import TRACKING, TrackingMarker

from ...tracking_readback import all_runs, assert_run_matches_directory, record_of


def test_a_tracked_run_is_its_run_directory_in_mlflow(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    secret = "sk-projection-secret-4b1d"
    report = evaluate(
        overrides=[
            f"paths.root={root}",
            "runner.limit=5",
            "runner.progress=off",
            f"+recipe.metadata.api_key={secret}",
        ]
    )
    run_dir = Path(report.run.output_dir)
    record = record_of(run_dir)
    assert record.synced and record.status == "FINISHED" and not record.reason
    assert record.run_id == report.run.tracking.run_id
    assert record.uri == report.run.tracking.uri == f"sqlite:///{root / 'mlflow.db'}"
    assert record.artifact_location == (root / "mlruns").as_uri()
    # The run's state remembers the MLflow run, for a rerun of a killed attempt to continue.
    (marker,) = (root / "state").glob(f"*/{TRACKING}")
    assert TrackingMarker.model_validate_json(marker.read_bytes()).run_id == record.run_id
    (run,) = all_runs(record.uri)
    assert run.info.run_id == record.run_id and run.info.run_name == record.run_name
    assert run.info.start_time == record.start_time
    assert_run_matches_directory(MlflowClient(tracking_uri=record.uri), record.run_id, run_dir)
    # The secret is masked where the run is recorded, in the directory and in MLflow.
    assert record.params["recipe.metadata.api_key"] == "***"
    assert run.data.params["recipe.metadata.api_key"] == "***"
    assert secret not in (run_dir / "tracking.json").read_text()
    assert secret not in str(run.data.params) + str(run.data.tags)


def test_a_run_over_its_failure_rate_ends_failed_in_mlflow(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the build cache's directory should be")
    root = tmp_path / "outputs"
    overrides = [
        f"paths.root={root}",
        "runner.limit=4",
        "runner.progress=off",
        f"runner.cache_dir={blocker}/cache",
        "runner.max_failure_rate=0.5",
    ]
    with pytest.raises(FailureRateExceededError, match="4 of 4 case results failed") as raised:
        evaluate(overrides=overrides)
    report = raised.value.report
    assert report is not None
    run_dir = Path(report.run.output_dir)
    record = record_of(run_dir)
    assert record.status == "FAILED" and record.synced
    (run,) = all_runs(record.uri)
    assert run.info.run_id == record.run_id == report.run.tracking.run_id
    assert run.info.status == "FAILED"
    assert run.data.metrics["cases.failed"] == 4.0
    client = MlflowClient(tracking_uri=record.uri)
    assert "report.json" in {a.path for a in client.list_artifacts(run.info.run_id)}
