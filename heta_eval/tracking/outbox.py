"""The tracking outbox: what a run could not send to MLflow, kept on disk until synced.

When the tracking server cannot be reached (at the start of a run or while logging), the
tracker writes everything it would have sent into one entry under
`{paths.root}/tracking_outbox/{entry_id}/`: `entry.json` (run name, tags, params, metrics,
final status, the server's run id when the run was created before the outage, and which
sync steps are done) and `files/` (the case table and the artifacts). Every write is a
temporary file renamed into place, so a crash leaves the previous version or the new one.
`heta-eval-sync` (heta_eval.tracking.sync) replays pending entries into MLflow.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field

from heta_eval.files import copy_atomically, file_mode
from heta_eval.records._base import Record

OUTBOX_DIR = "tracking_outbox"
ENTRY_FILE = "entry.json"
FILES_DIR = "files"
LOCAL_PREFIX = "outbox:"  # run ids of runs that exist only in the outbox so far
OUTBOX_TAG = "heta_eval.outbox_id"  # on synced runs: finds a run a broken sync created
SYNC_STEPS = ("params", "tags", "metrics", "table", "artifacts", "status")


class OutboxEntry(Record):
    """One run's tracking data, waiting to be uploaded."""

    entry_id: str
    uri: str = Field(description="the tracking URI the run was meant for")
    experiment: str
    artifact_location: str | None = None
    run_name: str = ""
    tags: dict[str, str] = Field(default_factory=dict)
    params: dict[str, str] = Field(default_factory=dict)
    metrics: list[tuple[str, float, int, int]] = Field(
        default_factory=list, description="(key, value, timestamp ms, step)"
    )
    table: str | None = Field(default=None, description="file under files/: the case table")
    table_name: str = "case_results.json"
    artifacts: list[str] = Field(default_factory=list, description="files under files/")
    server_run_id: str | None = Field(
        default=None, description="the run on the server (made before the outage, or by a sync)"
    )
    status: str | None = Field(default=None, description="final status; None while running")
    done: list[str] = Field(default_factory=list, description="sync steps already done")
    synced: bool = False
    reason: str = Field(default="", description="why the data went to the outbox")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def local_run_id(self) -> str:
        """The id a run state remembers: the server's, or `outbox:{entry_id}`."""
        return self.server_run_id or f"{LOCAL_PREFIX}{self.entry_id}"

    @property
    def pending(self) -> bool:
        """Finished (a final status) and not yet fully uploaded."""
        return self.status is not None and not self.synced


def outbox_dir(root: Path) -> Path:
    """Where the entries of runs under `root` (paths.root) are kept."""
    return Path(root) / OUTBOX_DIR


def _write_bytes(path: Path, data: bytes) -> None:
    """Atomic write: temporary file, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(fd, file_mode())
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class Outbox:
    """The entries under `{root}/tracking_outbox`."""

    def __init__(self, root: Path) -> None:
        self.directory = outbox_dir(root)

    def new_entry(self, **fields: Any) -> OutboxEntry:
        """A new entry (written at once)."""
        entry = OutboxEntry(entry_id=uuid.uuid4().hex, **fields)
        self.save(entry)
        return entry

    def entry_dir(self, entry: OutboxEntry | str) -> Path:
        """The directory of an entry (or of an entry id)."""
        entry_id = entry if isinstance(entry, str) else entry.entry_id
        return self.directory / entry_id

    def save(self, entry: OutboxEntry) -> None:
        """Write `entry.json` atomically."""
        data = json.dumps(entry.model_dump(mode="json"), indent=1).encode("utf-8")
        _write_bytes(self.entry_dir(entry) / ENTRY_FILE, data)

    def add_file(self, entry: OutboxEntry, source: Path, name: str | None = None) -> str:
        """Copy `source` into the entry's files (atomically); the stored name."""
        name = name or Path(source).name
        copy_atomically(Path(source), self.entry_dir(entry) / FILES_DIR / name)
        return name

    def add_json(self, entry: OutboxEntry, name: str, data: Any) -> str:
        """Store `data` as JSON in the entry's files; the stored name."""
        _write_bytes(self.entry_dir(entry) / FILES_DIR / name, json.dumps(data).encode("utf-8"))
        return name

    def file(self, entry: OutboxEntry, name: str) -> Path:
        """Path of a stored file."""
        return self.entry_dir(entry) / FILES_DIR / name

    def load(self, entry_id: str) -> OutboxEntry | None:
        """The entry with this id, if it exists and reads as a valid entry."""
        path = self.entry_dir(entry_id) / ENTRY_FILE
        try:
            return OutboxEntry.model_validate_json(path.read_bytes())
        except (OSError, ValueError):
            return None

    def entries(self) -> Iterator[OutboxEntry]:
        """Every readable entry, oldest first."""
        if not self.directory.is_dir():
            return
        found = [self.load(p.name) for p in self.directory.iterdir() if p.is_dir()]
        yield from sorted((e for e in found if e is not None), key=lambda e: e.created_at)

    def find(self, run_id: str) -> OutboxEntry | None:
        """The unsynced entry of a run, by its local id (`outbox:...`) or server run id."""
        if run_id.startswith(LOCAL_PREFIX):
            entry = self.load(run_id.removeprefix(LOCAL_PREFIX))
            return entry if entry is not None and not entry.synced else None
        for entry in self.entries():
            if entry.server_run_id == run_id and not entry.synced:
                return entry
        return None
