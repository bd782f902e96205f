"""`heta-eval-sync --uri <another store>` keeps the artifacts with that store (issue 23,
item 19): before, MLflow's default put them in ./mlruns of whatever directory the sync was
started in. A real run against a closed port (its tracking waits in the outbox), then a real
`heta-eval-sync` subprocess started in an empty directory.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval import EvaluationReport

from .processes import cli_env, free_port, run_cli

pytestmark = pytest.mark.timeout(300)


@pytest.mark.slow
def test_sync_into_a_new_store_keeps_artifacts_beside_it_not_in_the_cwd(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    done = run_cli(root, tmp_path, f"tracking.uri=http://127.0.0.1:{free_port()}", "runner.limit=2")
    assert done.returncode == 0 and "NOT UPLOADED" in done.stdout, done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store = tmp_path / "team" / "mlflow.db"
    store.parent.mkdir()
    uri = f"sqlite:///{store}"
    synced = subprocess.run(
        [sys.executable, "-m", "heta_eval.cli.sync", "--root", str(root), "--uri", uri],
        cwd=elsewhere,
        env=cli_env(MLFLOW_HTTP_REQUEST_MAX_RETRIES="0"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "synced 1 run(s), 0 failed" in synced.stdout
    assert list(elsewhere.iterdir()) == []  # no ./mlruns where the sync was started
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("heta_eval")
    assert experiment.artifact_location == (store.parent / "mlruns").as_uri()
    (run,) = client.search_runs([experiment.experiment_id])
    assert list((store.parent / "mlruns").rglob("report.json"))
    report = client.download_artifacts(run.info.run_id, "report.json", str(tmp_path))
    assert EvaluationReport.read_json(Path(report)) == EvaluationReport.read_json(done.report_path)
