"""Log metrics, params and tags so that one invalid item never stops the others.

Items MLflow would refuse (a key too long or with characters it does not accept, a value that
is not a number) are left out before sending and named in what is returned; a batch the
backend still refuses as invalid is sent again one item at a time, so everything valid
arrives. Other failures (the backend is down) are raised: the caller decides (outbox, retry).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from heta_eval.tracking.naming import key_problem

METRICS_PER_BATCH = 1000  # MLflow's per-request limits
PARAMS_PER_BATCH = 100
INVALID = "INVALID_PARAMETER_VALUE"
REJECTED_TAG = "heta_eval.tracking.rejected"  # on a run: the items MLflow refused


def _invalid(exc: BaseException) -> bool:
    return getattr(exc, "error_code", "") == INVALID


def _metric_problem(metric: Any) -> str | None:
    problem = key_problem(metric.key)
    if problem is None and (
        isinstance(metric.value, bool) or not isinstance(metric.value, int | float)
    ):
        problem = f"value {metric.value!r} is not a number"
    if problem is None and isinstance(metric.value, float) and math.isnan(metric.value):
        return None  # MLflow stores NaN
    return problem


def _describe(key: str, problem: str) -> str:
    shown = key if len(key) <= 80 else f"{key[:60]}...({len(key)} characters)"
    return f"{shown!r}: {problem}"


def log_leniently(
    client: Any,
    run_id: str,
    *,
    metrics: Sequence[Any] = (),
    params: Sequence[Any] = (),
    tags: Sequence[Any] = (),
) -> list[str]:
    """Log what is valid of `metrics`, `params` and `tags` (MLflow entities) to `run_id`;
    the items left out, each as `'key': why`."""
    rejected: list[str] = []
    kinds = (("metrics", metrics, METRICS_PER_BATCH), ("params", params, PARAMS_PER_BATCH))
    kinds += (("tags", tags, PARAMS_PER_BATCH),)
    for kind, items, size in kinds:
        valid = []
        for item in items:
            problem = _metric_problem(item) if kind == "metrics" else key_problem(item.key)
            if problem is None:
                valid.append(item)
            else:
                rejected.append(_describe(item.key, problem))
        for start in range(0, len(valid), size):
            batch = valid[start : start + size]
            try:
                client.log_batch(run_id, **{kind: batch})
            except Exception as exc:
                if not _invalid(exc):
                    raise
                for item in batch:  # find the ones the backend refuses; send the rest
                    try:
                        client.log_batch(run_id, **{kind: [item]})
                    except Exception as one:
                        if not _invalid(one):
                            raise
                        reason = str(one).splitlines()[0][:200]
                        rejected.append(_describe(item.key, f"refused by MLflow: {reason}"))
    return rejected
