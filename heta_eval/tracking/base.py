"""The tracker contract and the tracker that tracks nothing."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from heta_eval.records import EvaluationReport


@runtime_checkable
class Tracker(Protocol):
    """Projects one run directory into a tracking backend: its settings, report and files.

    `run_id` is None until `start` or `resume`; `uri` says where runs go (None: nowhere).
    `connect` does the slow part of getting ready (imports, opening the store) and may run
    in a background thread while the benchmark loads. A backend failure never raises out
    of `start`, `finish` or `end`: the run directory is marked unsynced instead.
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
        run_dir: Path,
        parent_run_id: str | None = None,
        sweep_dir: Path | None = None,
        start_time: float | None = None,
    ) -> None:
        """Create the run for `run_dir`; `start_time` (seconds since the epoch) is when its
        evaluation began, so that the run's start and duration are the evaluation's."""
        ...

    def resume(self, run_id: str, run_dir: Path) -> bool:
        """Continue an interrupted run; False when it cannot be found (start a new one)."""
        ...

    def finish(self, report: EvaluationReport, status: str = "FINISHED") -> None:
        """Log the run directory (written before this call) and end the run."""
        ...

    def end(self, status: str = "FINISHED") -> None:
        """End the run without a report (it failed or was stopped)."""
        ...

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
        run_dir: Path,
        parent_run_id: str | None = None,
        sweep_dir: Path | None = None,
        start_time: float | None = None,
    ) -> None:
        pass

    def resume(self, run_id: str, run_dir: Path) -> bool:
        return False

    def finish(self, report: EvaluationReport, status: str = "FINISHED") -> None:
        pass

    def end(self, status: str = "FINISHED") -> None:
        pass

    def describe(self) -> str:
        return "tracking disabled"
