"""The MLflow stores heta-eval wrote to, remembered so that the read side finds a run's store.

A run logged with another `paths.root`, `tracking.uri` or `MLFLOW_TRACKING_URI` is in a store
that `heta-eval-compare RUN_ID` and `heta-eval-runs` would not look in by default. Each tracked
run notes its store's URI in `{heta_eval cache}/tracking_stores.json` (most recent first, at
most MAX_STORES); the read side looks there after the store it was given or defaults to.
A URI that carries credentials (`https://user:secret@host`) is never written down.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from urllib.parse import urlsplit

from heta_eval.json_cache import cache_dir

STORES_FILE = "tracking_stores.json"
MAX_STORES = 20


def _registry() -> Path:

    return cache_dir() / STORES_FILE


def _read(path: Path) -> list[dict[str, object]]:
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("uri"), str)]


def has_credentials(uri: str) -> bool:
    """Whether `uri` names a user or password (`scheme://user:pw@host/...`)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return True
    return bool(parts.username or parts.password)


def remember_store(uri: str | None) -> None:
    """Note `uri` as the store most recently written to (never fails the run)."""
    if not uri or has_credentials(uri):
        return
    with contextlib.suppress(OSError):
        path = _registry()
        entries = [e for e in _read(path) if e["uri"] != uri]
        entries.insert(0, {"uri": uri, "last_used": time.time()})
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entries[:MAX_STORES], indent=1), encoding="utf-8")
        os.replace(tmp, path)


def store_exists(uri: str) -> bool:
    """False for a SQLite store whose file is gone (opening it would create it empty)."""
    if uri.startswith("sqlite:///"):
        return Path(uri.removeprefix("sqlite:///")).is_file()
    return True


def known_stores() -> list[str]:
    """The stores heta-eval wrote to, most recent first (SQLite files that are gone left out)."""
    with contextlib.suppress(OSError):
        return [str(e["uri"]) for e in _read(_registry()) if store_exists(str(e["uri"]))]
    return []
