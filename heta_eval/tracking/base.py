"""The tracker contract and the tracker that tracks nothing."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from heta_eval.records import EvaluationReport


class Tracker(Protocol):
    """Records one run: its settings, its report and artifacts."""

    def start(
        self, *, run_name: str, config: Mapping[str, Any], tags: Mapping[str, str]
    ) -> None: ...

    def resume(self, run_id: str) -> bool:
        """Continue an interrupted run; False when it cannot be found (start a new one)."""
        ...

    def log_report(self, report: EvaluationReport, artifacts: Mapping[str, Path]) -> None: ...

    def end(self, status: str = "FINISHED") -> None: ...

    def describe(self) -> str:
        """Where the run can be seen (a URL, or the command that opens the UI)."""
        ...


class NullTracker:
    """A tracker that records nothing (`tracking=none`); the report is still on disk."""

    def start(self, *, run_name: str, config: Mapping[str, Any], tags: Mapping[str, str]) -> None:
        pass

    def resume(self, run_id: str) -> bool:
        return False

    def log_report(self, report: EvaluationReport, artifacts: Mapping[str, Path]) -> None:
        pass

    def end(self, status: str = "FINISHED") -> None:
        pass

    def describe(self) -> str:
        return "tracking disabled"
