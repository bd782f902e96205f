"""Where a run keeps what it needs to resume or be reused, under its identity.

The state of an evaluation lives in `{state_dir}/{identity digest}/`: the journal of finished
case results, the tracking run an interrupted attempt started, and, once finished, the
completion marker with the state's own copy of the report. The marker stores the identity
and the sha256 of that report, so a report is reused only when it is provably the one this
identity produced: a report of another configuration written to the same run directory,
an edited or torn file, or a marker of another identity are never shown.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from pydantic import Field, ValidationError, field_validator

from heta_eval.files import copy_atomically, file_sha256, write_atomically
from heta_eval.records import EvaluationReport, RunIdentity
from heta_eval.records._base import Record
from heta_eval.redaction import mask_url_credentials
from heta_eval.run.journal import CaseJournal

log = logging.getLogger(__name__)

DONE = "done.json"
TRACKING = "tracking.json"
JOURNAL = "journal.jsonl"
REPORT = "report.json"


class CompletionMarker(Record):
    """What `done.json` says: which identity finished, and the digest of its report."""

    identity: RunIdentity
    report_id: str
    report_sha256: str
    report_path: str = Field(description="where the run wrote it (the state keeps a copy)")
    finished_at: datetime
    tracking_uri: str | None = None
    tracking_run_id: str | None = None


class TrackingMarker(Record):
    """The tracking run an unfinished attempt started (to continue it, not open another)."""

    uri: str | None
    run_id: str

    @field_validator("uri")
    @classmethod
    def _masked(cls, value: str | None) -> str | None:
        return None if value is None else mask_url_credentials(value)


def _holds_nothing(directory: Path) -> bool:
    """Whether `directory` holds only directories and lock files (`locks/*.lock`)."""
    for path in directory.rglob("*"):
        if path.is_file() and not (path.suffix == ".lock" and path.parent.name == "locks"):
            return False
        if not path.is_file() and not path.is_dir():
            return False
    return True


@contextlib.contextmanager
def discarded_unless_used(*directories: Path) -> Iterator[None]:
    """The `directories` a run creates (its state, store, data) are removed again when it
    fails with nothing in them but lock files: a run refused while its benchmark loads (a
    malformed line, a file not found) leaves no empty `store/` or `state/locks/`."""
    created = [Path(d) for d in directories if not Path(d).exists()]
    try:
        yield
    except BaseException:
        for directory in created:
            if directory.is_dir() and _holds_nothing(directory):
                shutil.rmtree(directory, ignore_errors=True)
        raise


@contextlib.contextmanager
def configuration_lock(state_dir: Path, key: str) -> Iterator[None]:
    """Hold one configuration's state for one process at a time.

    A second `heta-eval` of the same configuration waits here, then finds the first's
    finished report (or, if the first was killed, resumes its journal): two processes never
    append to one journal or log into one tracking run. The lock is the operating system's
    (released when the holder exits, however it exits).
    """
    from filelock import FileLock, Timeout

    locks = Path(state_dir) / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(locks / f"{key}.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        log.warning(
            "another heta-eval process is evaluating this configuration (lock %s); waiting "
            "for it to finish",
            lock.lock_file,
        )
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


class RunState:
    """The resumable, reusable state of one identity's evaluation."""

    def __init__(self, state_dir: Path, identity: RunIdentity) -> None:
        self.identity = identity
        self.directory = Path(state_dir) / identity.digest[:24]

    def journal(self) -> CaseJournal:
        """The journal of finished case results."""
        return CaseJournal(self.directory / JOURNAL, self.identity.digest)

    def completed(self) -> tuple[CompletionMarker, EvaluationReport] | None:
        """The finished evaluation of this identity and its report, if both prove themselves
        (the marker names this identity, the report has the digest the marker recorded and
        carries the same identity); None otherwise, saying why when something is off."""
        path = self.directory / DONE
        try:
            marker = CompletionMarker.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError) as exc:
            log.warning("ignoring the unreadable completion marker %s (%s)", path, _first(exc))
            return None
        report_path = self.directory / REPORT
        if marker.identity != self.identity:
            log.warning("ignoring %s: it belongs to another identity", path)
            return None
        try:
            if file_sha256(report_path) != marker.report_sha256:
                log.warning(
                    "the finished run's report %s is not the one it wrote; evaluating again",
                    report_path,
                )
                return None
            report = EvaluationReport.read_json(report_path)
        except (OSError, ValueError) as exc:
            log.warning(
                "the finished run's report %s is unreadable (%s); evaluating again",
                report_path,
                _first(exc),
            )
            return None
        if report.run.identity != self.identity:
            log.warning("the report %s has another identity; evaluating again", report_path)
            return None
        return marker, report

    def tracking_run(self, uri: str | None) -> str | None:
        """The tracking run an interrupted attempt started at `uri`, to continue it."""
        try:
            marker = TrackingMarker.model_validate_json((self.directory / TRACKING).read_bytes())
        except (OSError, ValidationError):
            return None
        masked = None if uri is None else mask_url_credentials(uri)
        return marker.run_id if marker.uri == masked else None

    def save_tracking_run(self, uri: str | None, run_id: str | None) -> None:
        """Remember the tracking run of this attempt."""
        if run_id:
            marker = TrackingMarker(uri=uri, run_id=run_id)
            _write(self.directory, TRACKING, marker.model_dump_json())

    def mark_completed(
        self, report_path: Path, report: EvaluationReport, tracking_run_id: str | None
    ) -> None:
        """Keep the state's own copy of the report (run directories may be shared, edited or
        removed) and record that this identity finished."""
        save_completion(self.directory, report_path, report, tracking_run_id, self.identity)

    def forget_completion(self) -> None:
        """Drop the completion marker (a finished run with failures is resumed, not reused)."""
        with contextlib.suppress(FileNotFoundError):
            (self.directory / DONE).unlink()

    def reset(self) -> None:
        """Forget everything (`runner.resume=false`)."""
        shutil.rmtree(self.directory, ignore_errors=True)

    def _write(self, name: str, text: str) -> None:
        _write(self.directory, name, text)


def save_completion(
    directory: Path,
    report_path: Path,
    report: EvaluationReport,
    tracking_run_id: str | None,
    identity: RunIdentity | None = None,
) -> None:
    """Record in the state `directory` that `report`'s identity finished, keeping the
    state's own copy of the report."""
    identity = identity or report.run.identity
    if identity is None:
        raise ValueError(f"{report_path}: the report has no run identity to record")
    kept = directory / REPORT
    copy_atomically(report_path, kept)
    marker = CompletionMarker(
        identity=identity,
        report_id=report.report_id,
        report_sha256=file_sha256(kept),
        report_path=str(Path(report_path).resolve()),
        finished_at=report.finished_at,
        tracking_uri=report.run.tracking.uri,
        tracking_run_id=tracking_run_id,
    )
    _write(directory, DONE, marker.model_dump_json(indent=2))


def _write(directory: Path, name: str, text: str) -> None:
    write_atomically(directory / name, text)


def _first(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__
