"""How long MLflow's HTTP client may try a tracking server, for every reader and writer.

MLflow retries a failing request with exponential backoff for minutes by default (7 retries,
factor 2). Runs bound this through the tracking config (`tracking.http_*`); the commands
and functions that only read (`heta-eval-runs`, `heta-eval-compare`, `load_runs`) bound it
here, to the same defaults, unless the environment sets the variables itself.
"""

from __future__ import annotations

import http.client
import os
import urllib.error
import urllib.request

from heta_eval.tracking.access import access_problem

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

    problem = access_problem(uri, exc, writing=False)
    if problem:
        return problem
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return f"cannot reach the MLflow tracking store at {uri}: {first[:300]}"


def request_timeout() -> float:
    """Seconds one MLflow request may take (`MLFLOW_HTTP_REQUEST_TIMEOUT`, default 10)."""
    try:
        return max(0.1, float(os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT") or 10))
    except ValueError:
        return 10.0


def no_answer(uri: str, timeout: float) -> Exception | None:
    """Why the HTTP server at `uri` does not answer a request within `timeout` seconds, or
    None when it answers (whatever its answer: a 401 or a 404 is an answer).

    One request to `{uri}/health`, no retries: a server that accepts connections and never
    answers would otherwise hold every MLflow request for its timeout times its retries."""
    url = uri.rstrip("/") + "/health"
    silent = f"{uri} accepted the connection but sent no answer in {timeout:g} s"
    request = urllib.request.Request(url, headers={"User-Agent": "heta-eval"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read(1024)
    except urllib.error.HTTPError as exc:
        exc.close()
        return None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            return TimeoutError(silent)
        return ConnectionError(f"cannot connect to {uri}: {reason}")
    except TimeoutError:
        return TimeoutError(silent)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return ConnectionError(f"no answer from {uri}: {type(exc).__name__}: {exc}")
    return None
