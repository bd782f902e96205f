"""A new local SQLite MLflow store copied from a template instead of migrated from scratch.

MLflow makes a new SQLite store by running every one of its alembic migrations (one to two
seconds of CPU, on every first run in a new `paths.root`). The migrated, empty schema depends
only on the MLflow release, so it is made once per MLflow version and alembic head in the
shared cache (`{cache}/mlflow-store/{version}-{head}.db`, the cache of `json_cache.cache_dir`)
and copied for each new store.

The template holds MLflow's tables and alembic version and no experiment: MLflow adds the
default experiment itself when it first opens the copy, with the artifact location and
creation time it would have given a store it had made (the location depends on the working
directory, so it cannot be in a shared template).
`tests/unit/tracking/test_store_template.py` compares a copied store with one MLflow made
itself.

Anything wrong on the way (a read-only cache, an MLflow whose internals moved) leaves the
store to MLflow's own creation, as without a template; a slower first run, never a failure.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from pathlib import Path

from heta_eval.json_cache import cache_dir

log = logging.getLogger(__name__)

TEMPLATE_DIR = "mlflow-store"
"""The templates' directory under the shared cache."""
LOCK_WAIT_SECONDS = 120.0
"""Longest wait for another process making the template."""


def template_path(cache: Path | None = None) -> Path:
    """Where the template of this MLflow version and alembic head lives (maybe not yet made)."""
    import mlflow
    from mlflow.store.db.utils import _get_latest_schema_revision

    root = cache if cache is not None else cache_dir()
    return root / TEMPLATE_DIR / f"{mlflow.__version__}-{_get_latest_schema_revision()}.db"


def ensure_template(cache: Path | None = None) -> Path:
    """The template's path, made first if it is missing (once, under a lock beside it)."""
    from filelock import FileLock

    path = template_path(cache)
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{path}.lock", timeout=LOCK_WAIT_SECONDS):
        if not path.is_file():
            _build(path)
    return path


def _build(path: Path) -> None:
    """Make MLflow's tables in a new SQLite file (MLflow's own creation, without the default
    experiment) and check it is at the alembic head before putting it at `path`."""
    import sqlalchemy
    from mlflow.store.db.utils import (
        _all_tables_exist,
        _get_latest_schema_revision,
        _get_schema_version,
        _initialize_tables,
    )

    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.unlink(missing_ok=True)
    engine = sqlalchemy.create_engine(f"sqlite:///{partial}")
    try:
        _initialize_tables(engine)
        head = _get_latest_schema_revision()
        version = _get_schema_version(engine)
        if version != head or not _all_tables_exist(engine):
            raise RuntimeError(f"template at alembic {version}, not {head}, or tables missing")
        with engine.connect() as connection:
            experiments = connection.exec_driver_sql("SELECT COUNT(*) FROM experiments").scalar()
        if experiments:
            raise RuntimeError(f"template has {experiments} experiments, expected none")
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        engine.dispose()
    os.replace(partial, path)
    log.debug("MLflow store template made at %s", path)


def create_from_template(database: Path) -> bool:
    """Create the SQLite store `database` (which must not exist) as a copy of the template.

    The caller holds the store's schema lock. Returns False, creating nothing, when no
    template can be had: MLflow then makes the store itself."""
    try:
        template = ensure_template()
    except Exception as exc:
        log.debug("no MLflow store template (%s); MLflow creates %s itself", exc, database)
        return False
    partial = database.with_name(f".{database.name}.{os.getpid()}.tmp")
    try:
        # The mode SQLite gives a file it creates (0644 under the umask).
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as out, template.open("rb") as source:
            shutil.copyfileobj(source, out)
        os.replace(partial, database)
    except OSError as exc:
        with contextlib.suppress(OSError):
            partial.unlink()
        log.debug("could not copy %s (%s); MLflow creates %s itself", template, exc, database)
        return False
    log.debug("new MLflow store %s copied from %s", database, template)
    return True
