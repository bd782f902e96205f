"""How long MLflow's HTTP client may try a tracking server, for every reader and writer.

MLflow retries a failing request with exponential backoff for minutes by default (7 retries,
factor 2). Runs bound this through the tracking config (`tracking.http_*`); the commands
and functions that only read (`heta-eval-runs`, `heta-eval-compare`, `load_runs`) bound it
here, to the same defaults, unless the environment sets the variables itself.
"""

from __future__ import annotations

import os

# The defaults of conf/tracking/mlflow.yaml: at most 3 attempts, 10 s each, 1 s then 2 s apart.
READER_BOUNDS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
}


def bound_http_requests(uri: str) -> None:
    """Bound MLflow's retries and timeouts for an http(s) `uri` (variables already set in
    the environment are kept)."""
    if uri.startswith(("http://", "https://")):
        for variable, value in READER_BOUNDS.items():
            os.environ.setdefault(variable, value)


def is_missing(exc: BaseException) -> bool:
    """Whether an MLflow error says the thing asked for does not exist (the server answered)."""
    return getattr(exc, "error_code", None) == "RESOURCE_DOES_NOT_EXIST"


def unreachable(uri: str, exc: BaseException) -> str:
    """`cannot reach the MLflow tracking store at URI: first line of the error`, or what a
    refusal (HTTP 401 or 403) means and what to do."""
    from heta_eval.tracking.access import access_problem

    problem = access_problem(uri, exc, writing=False)
    if problem:
        return problem
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return f"cannot reach the MLflow tracking store at {uri}: {first[:300]}"
