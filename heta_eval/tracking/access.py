"""A tracking server that answered "who are you?" (401) or "not you" (403), said clearly.

A server started with `mlflow server --app-name basic-auth` refuses a request without
credentials (HTTP 401) and a user without the permission a request needs (HTTP 403: EDIT to
log into an experiment, READ to read it). MLflow's client reads the credentials from
`MLFLOW_TRACKING_USERNAME` and `MLFLOW_TRACKING_PASSWORD` (or `MLFLOW_TRACKING_TOKEN`); its
error ("API request ... failed with error code 403 != 200") names neither the user nor what
to do. These messages do, and never show the password or token.
"""

from __future__ import annotations

import os
import re

USERNAME = "MLFLOW_TRACKING_USERNAME"
PASSWORD = "MLFLOW_TRACKING_PASSWORD"
TOKEN = "MLFLOW_TRACKING_TOKEN"

_STATUS = re.compile(r"error code (40[13]) != 200|\bHTTP (40[13])\b|status(?: code)?[ =:]+(40[13])")
_CODES = {"UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403}


def refusal_status(exc: BaseException) -> int | None:
    """401 or 403 when `exc` is MLflow's error for a refused request, else None."""
    code = _CODES.get(str(getattr(exc, "error_code", "")))
    if code is not None:
        return code
    match = _STATUS.search(str(exc))
    return int(next(g for g in match.groups() if g)) if match else None


def _who() -> str:
    user = os.environ.get(USERNAME, "").strip()
    if user:
        return f"user {user!r} ({USERNAME})"
    if os.environ.get(TOKEN, "").strip():
        return f"the token of {TOKEN}"
    return ""


def access_problem(
    uri: str, exc: BaseException, experiment: str | None = None, writing: bool = True
) -> str | None:
    """What a 401 or 403 from the server at `uri` means and what to do; None for any other
    error. `writing`: the request logged (needs EDIT) rather than read (needs READ)."""
    status = refusal_status(exc)
    if status is None:
        return None
    who = _who()
    if status == 401:
        if who:
            return (
                f"MLflow at {uri} refused the credentials of {who} (HTTP 401: not "
                f"authenticated); check {PASSWORD} (or {TOKEN})"
            )
        return (
            f"MLflow at {uri} requires a login (HTTP 401: not authenticated); set {USERNAME} "
            f"and {PASSWORD} (or {TOKEN}) to an account of that server"
        )
    where = f" on experiment {experiment!r}" if experiment else ""
    if not writing:
        return (
            f"MLflow at {uri} refused {who or 'this user'} (HTTP 403: permission denied)"
            f"{where}; reading needs READ permission on the experiment: ask its owner or an "
            "admin of the server for it"
        )
    return (
        f"MLflow at {uri} refused {who or 'this user'} (HTTP 403: permission denied){where}; "
        "logging a run needs EDIT permission on the experiment: ask its owner or an admin of "
        "the server for it, or log into an experiment of your own (tracking.experiment=...)"
    )
