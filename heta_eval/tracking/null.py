"""The tracker that tracks nothing (`tracking=none`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from heta_eval.protocols import BaseTracker
from heta_eval.records import EvaluationReport


class NullTracker(BaseTracker):
    """A tracker that records nothing (`tracking=none`); the report is still on disk."""

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

    def finish(self, report: EvaluationReport, status: str = "FINISHED") -> None:
        pass

    def end(self, status: str = "FINISHED") -> None:
        pass

    def describe(self) -> str:
        return "tracking disabled"
