"""Runs of a parallel sweep log the same benchmark as their dataset input at the same moment.

MLflow finds or inserts a dataset per request, so two concurrent requests can both insert it
and the second fails on the unique key (PostgreSQL's UniqueViolation, SQLite's UNIQUE
constraint). That failure once took a sweep job's tracking offline and left its run RUNNING
on the server, and the sweep's parent FAILED. The race is real here: several
trackers on one SQLite store log one dataset at once, round after round.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from mlflow.entities import Dataset, DatasetInput, InputTag

from heta_eval.tracking.mlflow_tracker import MlflowTracker
from heta_eval.tracking.projection import _log_dataset as log_dataset

ROUNDS = 5
RUNS = 8


@pytest.mark.slow  # eight trackers, five rounds of a real race
def test_concurrent_runs_logging_one_dataset_all_get_it(tmp_path: Path) -> None:
    trackers = [MlflowTracker(root=tmp_path) for _ in range(RUNS)]
    failures: list[str] = []
    for round_ in range(ROUNDS):
        for tracker in trackers:
            run_dir = tmp_path / "runs" / f"{round_}-{id(tracker)}"
            tracker.start(run_name=f"r{round_}", config={"round": round_}, tags={}, run_dir=run_dir)
        dataset = Dataset(
            name=f"benchmark-{round_}", digest=f"{round_:08d}", source_type="local", source="/x"
        )
        given = DatasetInput(dataset, tags=[InputTag("mlflow.data.context", "evaluation")])
        barrier = threading.Barrier(RUNS)

        def log(tracker: MlflowTracker, barrier: threading.Barrier, given: DatasetInput) -> None:
            barrier.wait()
            try:
                log_dataset(tracker.client, tracker.run_id, given)
            except Exception as exc:  # what would have taken the run's tracking offline
                failures.append(f"{type(exc).__name__}: {str(exc)[:160]}")

        threads = [threading.Thread(target=log, args=(t, barrier, given)) for t in trackers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not failures, failures
        for tracker in trackers:
            run = tracker.client.get_run(tracker.run_id)
            assert [d.dataset.name for d in run.inputs.dataset_inputs] == [dataset.name]
            tracker.end("FINISHED")
    assert not any(t.offline for t in trackers)
