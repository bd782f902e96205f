"""MLflow is a projection of the run directories: a lost store is rebuilt from them.

A single run and a two-job sweep are tracked into one SQLite store; `heta-eval-sync --uri`
replays every run directory under the root into a new store, which then holds the same runs
(the sweep's jobs under its parent) with equal params, metrics and artifacts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlflow import MlflowClient

from heta_eval.tracking.naming import RUN_DIR_TAG
from heta_eval.tracking.run_record import RECORD_FILE, read_record

PARENT = "mlflow.parentRunId"


def _runs(uri: str) -> dict[str, Any]:
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("heta_eval")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    return {run.data.tags[RUN_DIR_TAG]: run for run in runs}


def _artifacts(uri: str, run: Any) -> list[str]:
    return sorted(a.path for a in MlflowClient(uri).list_artifacts(run.info.run_id))


def test_a_deleted_store_is_rebuilt_from_the_run_directories(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    single = cli()
    assert single.returncode == 0, single.stderr
    sweep = cli("-m", "recipe.chunk_size=64,128")
    assert sweep.returncode == 0, sweep.stderr
    old_uri = f"sqlite:///{root / 'mlflow.db'}"
    before = _runs(old_uri)
    assert len(before) == 4  # the single run, the sweep's parent and its two jobs
    records = [r for p in root.rglob(RECORD_FILE) if (r := read_record(p.parent)) is not None]
    assert len(records) == 4 and all(r.synced for r in records)

    (root / "mlflow.db").unlink()
    new_uri = f"sqlite:///{tmp_path / 'rebuilt.db'}"
    synced = cli("--root", str(root), "--uri", new_uri, program="heta-eval-sync")
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "synced 4 run(s), 0 failed, 0 waiting" in synced.stdout

    after = _runs(new_uri)
    assert set(after) == set(before)
    old_ids = {run.info.run_id: where for where, run in before.items()}
    new_ids = {run.info.run_id: where for where, run in after.items()}
    for where, old in before.items():
        new = after[where]
        assert new.data.params == old.data.params, where
        assert new.data.metrics == old.data.metrics, where
        assert new.info.status == old.info.status == "FINISHED"
        assert _artifacts(new_uri, new) == _artifacts(old_uri, old), where
        # A job stays under its sweep's parent (the parent's new run in the new store).
        old_parent = old.data.tags.get(PARENT)
        new_parent = new.data.tags.get(PARENT)
        assert (old_parent and old_ids[old_parent]) == (new_parent and new_ids[new_parent])

    again = cli("--root", str(root), "--uri", new_uri, program="heta-eval-sync")
    assert again.returncode == 0
    assert len(_runs(new_uri)) == 4  # a repeated sync finds its runs again
