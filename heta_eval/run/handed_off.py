"""Runs whose MLflow logging a tracking service took over and has not done yet.

With `tracking.service=true` a run hands its logging to the tracking service
(`run.tracking_service`) and exits; until the service has logged it, its MLflow run is
RUNNING with no metrics. What the service holds says what it is: its spool file
`BASE/KEY/spool/RUN_ID.json` exists from the hand-off until the logging is done
(`RUN_ID.failed` when the logging failed), and the service holds `BASE/KEY/lock` while it
lives (a spool whose service has ended is logged by the next service for that store).
`heta-eval-runs` shows such a run as LOGGING (or LOGGING FAILED) with its spool file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from heta_eval.run.service_link import base_dir
from heta_eval.run.tracking_service import LOCK, SPOOL

LOGGING = "LOGGING"
LOGGING_FAILED = "LOGGING FAILED"


@dataclass(frozen=True)
class HandedOff:
    """A run's hand-off in a tracking service's spool: `spool`, the file; `failed`, whether
    its logging failed (the reason is in the service's log); `service_alive`, whether a
    service holds that spool's directory (None: cannot be told here); `report`, the run's
    report.json the hand-off logs."""

    run_id: str
    spool: Path
    failed: bool
    service_alive: bool | None
    report: str | None

    @property
    def status(self) -> str:
        """What the run's status is while its MLflow run says RUNNING."""
        return LOGGING_FAILED if self.failed else LOGGING

    def describe(self) -> str:
        """One line: what is pending, where, and what happens next."""
        if self.failed:
            log = self.spool.parent.parent / "service.log"
            return (
                f"{self.run_id}: the tracking service could not log it (reason in {log}); "
                f"what it was handed: {self.spool}"
            )
        if self.service_alive is False:
            nxt = "its service has ended; the next run with tracking.service=true logs it"
        else:
            nxt = "the tracking service logs it"
        report = f", report {self.report}" if self.report else ""
        return f"{self.run_id}: MLflow logging pending in {self.spool}{report} ({nxt})"


def handed_off(run_ids: Iterable[str], base: Path | None = None) -> dict[str, HandedOff]:
    """The hand-offs of `run_ids` that the services under `base` (default: this user's
    service directory, `service_link.base_dir`) hold and have not logged, by run id."""
    wanted = set(run_ids)
    found: dict[str, HandedOff] = {}
    if not wanted:
        return found
    base = base_dir() if base is None else base
    try:
        directories = [p for p in base.iterdir() if (p / SPOOL).is_dir()]
    except OSError:
        return found
    for directory in directories:
        alive: bool | None = None
        try:
            paths = sorted((directory / SPOOL).iterdir())
        except OSError:
            continue
        for path in paths:
            if path.stem not in wanted or path.suffix not in (".json", ".failed"):
                continue
            if alive is None:
                alive = _lock_held(directory / LOCK)
            found[path.stem] = HandedOff(
                run_id=path.stem,
                spool=path,
                failed=path.suffix == ".failed",
                service_alive=alive,
                report=_report_of(path),
            )
    return found


def _report_of(spool: Path) -> str | None:
    """The report.json path a spool file's hand-off logs, if it can be read."""
    try:
        entry = json.loads(spool.read_text(encoding="utf-8"))
        return str(entry["call"]["artifacts"]["report"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _lock_held(lock: Path) -> bool | None:
    """Whether some process holds a flock on `lock` (the service, while it lives), read from
    /proc/locks without taking it (a service starting must never find it taken); None when
    there is no /proc/locks."""
    try:
        info = lock.stat()
    except OSError:
        return False
    try:
        table = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    for line in table.splitlines():
        fields = line.split()
        # `N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF`; a waiter's line has `->`.
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == device:
            return True
    return False
