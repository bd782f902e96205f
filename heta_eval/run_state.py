"""Where a run keeps what it needs to resume: its journal, tracking run id and completion.

A run's state lives in `{state_dir}/{key}/`, the key derived from the configuration hash and
the code version, so rerunning the same command finds it whatever run directory Hydra
chooses, and a changed configuration or code starts afresh.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from heta_eval.journal import CaseJournal

log = logging.getLogger(__name__)

DONE = "done.json"
TRACKING = "tracking_run_id"
JOURNAL = "journal.jsonl"


@dataclass(frozen=True)
class CompletedRun:
    """A finished evaluation: where its report is and which tracking run holds it."""

    report: Path
    tracking_run_id: str | None


def state_key(config_hash: str, code_version: str) -> str:
    """Key of a run's state: the configuration and the code that evaluates it."""
    return hashlib.sha256(f"{config_hash}:{code_version}".encode()).hexdigest()[:16]


class RunState:
    """The resumable state of one configuration's evaluation."""

    def __init__(self, state_dir: Path, config_hash: str, code_version: str) -> None:
        self.config_hash = config_hash
        self.directory = Path(state_dir) / state_key(config_hash, code_version)

    def journal(self) -> CaseJournal:
        """The journal of finished case results."""
        return CaseJournal(self.directory / JOURNAL, self.config_hash)

    def completed(self) -> CompletedRun | None:
        """The finished run, if this configuration was evaluated to the end (and its report
        is still there)."""
        try:
            done = json.loads((self.directory / DONE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("ignoring the unreadable completion marker %s (%s)", self.directory, exc)
            return None
        report = Path(done.get("report", "")) if isinstance(done, dict) else Path()
        if not report.is_file():
            return None
        from heta_eval.records import EvaluationReport

        try:  # a torn or edited report is evaluated again, never trusted
            EvaluationReport.read_json(report)
        except (OSError, ValueError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            log.warning(
                "the report of the finished run, %s, is unreadable (%s); evaluating again",
                report,
                reason,
            )
            return None
        return CompletedRun(report=report, tracking_run_id=done.get("tracking_run_id"))

    def tracking_run_id(self) -> str | None:
        """The tracking run an interrupted evaluation started, to resume it."""
        path = self.directory / TRACKING
        return path.read_text(encoding="utf-8").strip() or None if path.is_file() else None

    def _write(self, name: str, text: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        # A temporary name of its own: two processes of one configuration may write at once.
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.directory / name)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold this configuration's state for one process at a time.

        A second `heta-eval` of the same configuration waits here, then finds the first's
        finished report (or, if the first was killed, resumes its journal): two processes
        never append to one journal or log into one tracking run. The lock is the
        operating system's (released when the holder exits, however it exits).
        """
        from filelock import FileLock, Timeout

        self.directory.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.directory) + ".lock")
        try:
            lock.acquire(timeout=0)
        except Timeout:
            log.warning(
                "another heta-eval process is evaluating this configuration (%s); waiting "
                "for it to finish",
                self.directory,
            )
            lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def save_tracking_run_id(self, run_id: str | None) -> None:
        """Remember the tracking run of this evaluation."""
        if run_id:
            self._write(TRACKING, run_id)

    def mark_completed(self, report: Path, tracking_run_id: str | None) -> None:
        """Record that the evaluation finished and where its report is."""
        self._write(
            DONE,
            json.dumps({"report": str(Path(report).resolve()), "tracking_run_id": tracking_run_id}),
        )

    def reset(self) -> None:
        """Forget everything (`runner.resume=false`)."""
        shutil.rmtree(self.directory, ignore_errors=True)
