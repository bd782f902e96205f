"""MLflow is a projection of the run directories: with the store deleted, `heta-eval-sync
--root ROOT --uri NEW_URI` brings back every run from the directories alone — single runs and
a sweep with its parent and its children (under the new parent) — with the same name,
status, params, metrics, tags and artifact files, read back with MlflowClient from both
stores. `heta-eval` and `heta-eval-sync` run in this process."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from heta_eval.sweep.end import BEST_RUN_TAG
from heta_eval.tracking.run_record import read_record

from ...conftest import InProcessCli
from ...tracking_readback import (
    PARENT_TAG,
    RUN_DIR_TAG,
    all_runs,
    assert_run_matches_directory,
    heta_eval_sync,
    record_of,
    snapshot,
)

# Tags whose value is another run's id: the same run, another id in the new store.
RUN_ID_TAGS = (BEST_RUN_TAG,)


def _store(uri: str) -> dict[str, dict[str, Any]]:
    """Each run of the store by its run directory, with its parent's run directory."""
    client = MlflowClient(tracking_uri=uri)
    runs = all_runs(uri)
    where = {run.info.run_id: run.data.tags[RUN_DIR_TAG] for run in runs}
    found = {}
    for run in runs:
        seen = snapshot(client, run)
        seen["parent"] = where.get(run.data.tags.get(PARENT_TAG, ""))
        for tag in RUN_ID_TAGS:
            if tag in seen["tags"]:
                seen["tags"][tag] = where[seen["tags"][tag]]
        found[run.data.tags[RUN_DIR_TAG]] = seen
    return found


@pytest.mark.slow  # three evaluations (a single run and a sweep of two jobs)
def test_a_deleted_store_is_rebuilt_from_the_run_directories(
    cli: InProcessCli, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "outputs"
    single = cli("runner.limit=4", "runner.top_k=3")
    assert single.returncode == 0, single.stderr
    sweep = cli("-m", "runner.limit=3", "recipe.chunk_size=32,64")
    assert sweep.returncode == 0, sweep.stderr
    old_uri = f"sqlite:///{root / 'mlflow.db'}"
    before = _store(old_uri)
    assert len(before) == 4  # the single run, the sweep's parent and its two jobs
    # Every run and sweep directory has its record (a run's state keeps another file of
    # that name, which is no record).
    directories = [p.parent for p in root.rglob("tracking.json") if read_record(p.parent)]
    assert sorted(map(str, directories)) == sorted(before)
    assert all(record_of(d).synced for d in directories)
    (parent_dir,) = [d for d in before if before[d]["tags"].get("heta_eval.kind") == "sweep"]
    assert sorted(d for d in before if before[d]["parent"] == parent_dir) == sorted(
        str(p.parent) for p in Path(parent_dir).glob("*/report.json")
    )

    (root / "mlflow.db").unlink()  # the store is lost, artifacts and all
    shutil.rmtree(root / "mlruns")
    new_uri = f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}"
    synced = heta_eval_sync(capsys, "--root", str(root), "--uri", new_uri)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "synced 4 run(s), 0 failed, 0 waiting" in synced.stdout

    after = _store(new_uri)
    assert sorted(after) == sorted(before)
    for directory, seen in before.items():
        assert after[directory] == seen, directory
    client = MlflowClient(tracking_uri=new_uri)
    for run in all_runs(new_uri):
        run_dir = Path(run.data.tags[RUN_DIR_TAG])
        if run_dir != Path(parent_dir):
            assert_run_matches_directory(client, run.info.run_id, run_dir)
    # The records still name the store the runs were made in; a replay elsewhere is a copy.
    assert all(record_of(d).uri == old_uri for d in directories)
    # Nothing is replayed twice into the new store.
    again = heta_eval_sync(capsys, "--root", str(root), "--uri", new_uri)
    assert again.returncode == 0 and "synced 4 run(s), 0 failed" in again.stdout
    assert len(all_runs(new_uri)) == 4
    assert _store(new_uri) == after
