"""The tracker contract and the tracker that tracks nothing."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from heta_eval.records import EvaluationReport


@runtime_checkable
class Tracker(Protocol):
    """Records one run: its settings, its report and artifacts.

    `run_id` is None until `start` or `resume`; `uri` says where runs go (None: nowhere).
    `connect` does the slow part of getting ready (imports, opening the store) and may run
    in a background thread while the benchmark loads; `start` waits for nothing else. (An
    MlflowTracker runs in a worker process instead: `heta_eval.run.tracker_process`.)
    """

    run_id: str | None
    uri: str | None

    def connect(self) -> None: ...

    def start(
        self,
        *,
        run_name: str,
        config: Mapping[str, Any],
        tags: Mapping[str, str],
        parent_run_id: str | None = None,
        start_time: float | None = None,
    ) -> None:
        """Create the run; `start_time` (seconds since the epoch) is when its evaluation
        began, so that the run's start and duration are the evaluation's."""
        ...

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

    run_id: str | None = None
    uri: str | None = None

    def connect(self) -> None:
        pass

    def start(
        self,
        *,
        run_name: str,
        config: Mapping[str, Any],
        tags: Mapping[str, str],
        parent_run_id: str | None = None,
        start_time: float | None = None,
    ) -> None:
        pass

    def resume(self, run_id: str) -> bool:
        return False

    def log_report(self, report: EvaluationReport, artifacts: Mapping[str, Path]) -> None:
        pass

    def end(self, status: str = "FINISHED") -> None:
        pass

    def describe(self) -> str:
        return "tracking disabled"
