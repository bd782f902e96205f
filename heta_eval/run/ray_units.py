"""Run units as Ray tasks (`runner.executor=ray`): on a private local cluster or a running one.

Each unit is one task running the same `run_unit_in_worker` as the local process pool, so
the results are the same; outcomes come back to the driver as each task finishes (the
journal, the cache counters and the `units` progress advance there). A task whose worker
dies (killed, out of memory, a lost node) is run again by Ray, up to
`runner.ray_max_retries` times; an exception raised by the unit itself is not retried (a
unit records its own failures as case errors, so an exception here is a bug to see).

Ray is imported only here, and only when this executor is chosen.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from collections.abc import Callable, Sequence
from typing import Any

from heta_eval.kb import RawSource
from heta_eval.run.journal import CaseKey
from heta_eval.run.settings import (
    RayExecutorError,
    RunnerSettings,
    check_shared_paths,
    is_remote,
)
from heta_eval.run.units import UnitEvaluator, UnitOutcome, UnitPlan, run_unit_in_worker

log = logging.getLogger(__name__)

# A private local cluster keeps its shared-memory object store small: units pass documents'
# raw keys and small outcomes, never big objects.
LOCAL_OBJECT_STORE_BYTES = 100 * 1024 * 1024


def check_ray_settings(settings: RunnerSettings) -> None:
    """Refuse `runner.executor=ray` without Ray installed, or with paths a remote cluster
    cannot share (`check_shared_paths`), before any work."""
    if settings.executor != "ray":
        return
    if importlib.util.find_spec("ray") is None:
        raise RayExecutorError(
            "runner.executor=ray needs Ray, which is not installed: pip install 'heta-eval[ray]'"
        )
    check_shared_paths(settings)


def _connect(settings: RunnerSettings) -> bool:
    """Connect to the configured cluster, or start a private one; whether we started it
    (and so must shut it down)."""
    import ray

    if ray.is_initialized():
        return False
    if is_remote(settings.ray_address):
        ray.init(address=settings.ray_address, log_to_driver=False)
    else:
        ray.init(
            num_cpus=settings.workers,
            include_dashboard=False,
            object_store_memory=LOCAL_OBJECT_STORE_BYTES,
            log_to_driver=False,
        )
    return True


async def run_units_on_ray(
    evaluator: UnitEvaluator,
    jobs: Sequence[tuple[UnitPlan, Sequence[RawSource]]],
    kb_name: str,
    done: frozenset[CaseKey],
    settings: RunnerSettings,
    on_outcome: Callable[[UnitOutcome], None],
) -> list[UnitOutcome]:
    """Evaluate every (plan, sources) as a Ray task; `on_outcome` is called in the driver as
    each one finishes. Returns the outcomes in completion order."""
    import ray

    check_shared_paths(settings)
    started = _connect(settings)
    try:
        task: Any = ray.remote(run_unit_in_worker).options(
            num_cpus=settings.ray_num_cpus,
            max_retries=settings.ray_max_retries,
            retry_exceptions=False,
        )
        shared = ray.put(evaluator)  # sent once, not with every task
        refs = [task.remote(shared, plan, list(sources), kb_name, done) for plan, sources in jobs]
        address = ray.get_runtime_context().gcs_address
        log.info("%d run units submitted to the Ray cluster at %s", len(refs), address)
        outcomes = []
        for future in asyncio.as_completed([asyncio.wrap_future(ref.future()) for ref in refs]):
            outcome = await future
            on_outcome(outcome)
            outcomes.append(outcome)
        return outcomes
    finally:
        if started:
            ray.shutdown()
