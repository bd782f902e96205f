"""The MLflow calls of a sweep's parent run: find an unfinished one to resume, log its params
(never changed once logged) and tags, end the runs a killed local job left RUNNING."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from heta_eval.tracking.naming import param_value
from heta_eval.tracking.sweep_end import child_runs
from heta_eval.tracking.sweep_ids import KIND_TAG, SWEEP_ID_TAG, SWEEP_KIND

# Launchers whose jobs are processes of the launching one (they end when it ends): at exit,
# their child runs still RUNNING are ended KILLED. SLURM jobs outlive the launcher.
LOCAL_LAUNCHERS = frozenset({"basic", "joblib", "local_parallel", "submitit_local"})
TAGS_PER_BATCH = 100  # MLflow's per-request limits


def unfinished_parent(client: Any, experiment_id: str, sid: str) -> Any:
    """The latest parent run of this sweep, if it did not finish."""
    found = client.search_runs(
        [experiment_id],
        filter_string=(f"tags.`{SWEEP_ID_TAG}` = '{sid}' and tags.`{KIND_TAG}` = '{SWEEP_KIND}'"),
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    return found[0] if found and found[0].info.status != "FINISHED" else None


def log_params(
    client: Any, run_id: str, params: Mapping[str, str], existing: Mapping[str, str]
) -> None:
    """Log the params not in `existing` (on a resumed parent, the first attempt's stay)."""
    from mlflow.entities import Param

    new = [Param(k, param_value(v)) for k, v in params.items() if k not in existing]
    for i in range(0, len(new), 100):
        client.log_batch(run_id, params=new[i : i + 100])


def set_tags(client: Any, run_id: str, tags: Mapping[str, str]) -> None:
    """Set `tags` on the run, in MLflow's batches."""
    from mlflow.entities import RunTag

    items = [RunTag(k, str(v)) for k, v in tags.items()]
    for i in range(0, len(items), TAGS_PER_BATCH):
        client.log_batch(run_id, tags=items[i : i + TAGS_PER_BATCH])


def end_orphans(client: Any, experiment_id: str, run_id: str, started_ms: int) -> None:
    """Child runs of this attempt (started since `started_ms`) that a killed local worker left
    RUNNING: KILLED."""
    for child in child_runs(client, experiment_id, run_id):
        started = child.info.start_time or 0
        if child.info.status == "RUNNING" and started >= started_ms:
            client.set_terminated(child.info.run_id, status="KILLED")
