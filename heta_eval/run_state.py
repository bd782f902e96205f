"""Where a run keeps what it needs to resume: its journal, tracking run id and completion.

A run's state lives in `{state_dir}/{key}/`, the key derived from the configuration hash and
the code version, so rerunning the same command finds it whatever run directory Hydra
chooses, and a changed configuration or code starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from heta_eval.journal import CaseJournal

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
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        report = Path(done.get("report", ""))
        if not report.is_file():
            return None
        return CompletedRun(report=report, tracking_run_id=done.get("tracking_run_id"))

    def tracking_run_id(self) -> str | None:
        """The tracking run an interrupted evaluation started, to resume it."""
        path = self.directory / TRACKING
        return path.read_text(encoding="utf-8").strip() or None if path.is_file() else None

    def _write(self, name: str, text: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.directory / name)

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
