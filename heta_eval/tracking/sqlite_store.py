"""A local SQLite MLflow store shared by processes that start at once (a parallel sweep, a
few `heta-eval` runs side by side).

Two things go wrong there without care, and both are handled here:

- **Creating the schema.** MLflow creates (or upgrades) a new store's tables when a process
  first opens it; processes doing so together lose the race (`table ... already exists`,
  `duplicate column name`). `open_client` opens the store under an exclusive lock on a file
  beside it (`mlflow.db.lock`), so the schema is made once and the others find it made. A new
  store is a copy of a migrated empty one (`store_template.py`), not migrated afresh.
- **Lock waits.** SQLite lets one writer at a time; a write that meets another waits up to
  `BUSY_SECONDS` inside SQLite, and a call that still ends with "database is locked" (SQLite
  gives up at once where waiting could deadlock) is tried again until `LOCK_WAIT_SECONDS`
  have passed. Then the error is raised, and the run's data goes to the outbox.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from heta_eval.files import flock_within
from heta_eval.tracking.store_template import create_from_template

log = logging.getLogger(__name__)

LOCK_WAIT_SECONDS = 120.0
"""Longest wait for the schema lock, and for one tracking call to get past a locked store."""
BUSY_SECONDS = 30
"""How long SQLite itself waits for another process's write lock (its default is 5 s)."""
NOT_REPEATABLE = frozenset({"log_table"})
"""Calls that add to what exists (a table's rows): tried again only if nothing was written."""

_busy_timeout_set = False


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` tracking URI; None for other URIs."""
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri.removeprefix("sqlite:///").split("?", 1)[0])


def is_locked(exc: BaseException) -> bool:
    """Whether `exc` says an SQLite database was locked by another process."""
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text


@contextlib.contextmanager
def schema_lock(database: Path, timeout: float = LOCK_WAIT_SECONDS) -> Iterator[None]:
    """Hold an exclusive lock on `{database}.lock` (waiting at most `timeout` seconds)."""
    database.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(f"{database}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        if not flock_within(fd, timeout):
            raise TimeoutError(
                f"could not lock {database}.lock within {timeout:g}s to open the "
                "MLflow store (another process holds it)"
            )
        yield
    finally:
        os.close(fd)  # releases the lock


def _set_busy_timeout() -> None:
    """Make every SQLite connection SQLAlchemy opens in this process wait `BUSY_SECONDS`
    for a lock held by another process."""
    global _busy_timeout_set
    if _busy_timeout_set:
        return
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        if isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.execute(f"PRAGMA busy_timeout = {BUSY_SECONDS * 1000}")

    event.listen(Engine, "connect", on_connect)
    _busy_timeout_set = True


class LockPatientClient:
    """An MlflowClient whose calls are tried again while an SQLite store is locked by
    another process, for at most `wait` seconds each; everything else is the client's."""

    def __init__(self, client: Any, wait: float = LOCK_WAIT_SECONDS) -> None:
        self._client = client
        self._wait = wait

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute) or name.startswith("_"):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._patiently(name, attribute, args, kwargs)

        return call

    def _patiently(
        self, name: str, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        deadline = time.monotonic() + self._wait
        delay = 0.05
        while True:
            try:
                return method(*args, **kwargs)
            except Exception as exc:
                if not is_locked(exc) or time.monotonic() + delay > deadline:
                    raise
                if name in NOT_REPEATABLE and self._written(args, kwargs):
                    return None  # the rows are stored; only MLflow's bookkeeping tag failed
                log.info("MLflow store locked by another process; %s again in %.2fs", name, delay)
            time.sleep(delay)
            delay = min(1.0, delay * 2) * random.uniform(0.75, 1.25)

    def _written(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        run_id = kwargs.get("run_id", args[0] if args else None)
        name = kwargs.get("artifact_file", args[2] if len(args) > 2 else None)
        try:
            return name in {a.path for a in self._client.list_artifacts(run_id)}
        except Exception:
            return False


def open_client(uri: str) -> Any:
    """An MlflowClient for `uri`; for a local SQLite store, opened (its schema created or
    upgraded) under the schema lock, with SQLite lock waits and patient calls."""
    from mlflow import MlflowClient

    database = sqlite_path(uri)
    if database is None:
        return MlflowClient(tracking_uri=uri)
    _set_busy_timeout()
    with schema_lock(database):
        if not database.exists():
            create_from_template(database)  # else MLflow makes the tables itself, below
        # MLflow opens the store (creating or upgrading its tables) when the client is made.
        client = LockPatientClient(MlflowClient(tracking_uri=uri))
        client.search_experiments(max_results=1)
    return client
