"""`heta-eval-sync --uri <another store>` keeps the artifacts with that store (issue 23,
item 19): before, MLflow's default put them in ./mlruns of whatever directory the sync was
started in. A run against a closed port (its directory marked unsynced), then
`heta-eval-sync` started in an empty directory; both in this process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from ..conftest import InProcessCli
from ..tracking_readback import assert_run_matches_directory, heta_eval_sync
from .conftest import report_path
from .processes import free_port


def test_sync_into_a_new_store_keeps_artifacts_beside_it_not_in_the_cwd(
    cli: InProcessCli,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "outputs"
    done = cli(f"tracking.uri=http://127.0.0.1:{free_port()}", "runner.limit=2")
    assert done.returncode == 0 and "NOT IN MLFLOW" in done.stdout, done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store = tmp_path / "team" / "mlflow.db"
    store.parent.mkdir()
    uri = f"sqlite:///{store}"
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    synced = heta_eval_sync(capsys, "--root", str(root), "--uri", uri)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "synced 1 run(s), 0 failed" in synced.stdout
    assert list(elsewhere.iterdir()) == []  # no ./mlruns where the sync was started
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("heta_eval")
    assert experiment.artifact_location == (store.parent / "mlruns").as_uri()
    (run,) = client.search_runs([experiment.experiment_id])
    assert list((store.parent / "mlruns").rglob("report.json"))
    assert_run_matches_directory(client, run.info.run_id, report_path(done.stdout).parent)
