"""What a run directory says about its MLflow run: `tracking.json`.

MLflow is a projection of the run directory. The tracker writes this record when it creates
(or continues) the MLflow run and updates it when the run is logged and ended: `synced`
says whether MLflow holds everything the directory holds. A run whose tracking failed at any
point keeps `synced: false` with the reason, and `heta-eval-sync` replays it (and, given
another URI, every tracked run directory) from the directory alone: the run's name, tags and
params are here, its metrics, case table and artifacts come from report.json and the files
beside it. A sweep's directory holds its parent run's record the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from heta_eval.files import write_atomically
from heta_eval.records._base import Record

RECORD_FILE = "tracking.json"
RUN_KIND = "run"
SWEEP_KIND = "sweep"


class TrackingRecord(Record):
    """One run directory's MLflow run: where it goes, what it is called, what is logged."""

    kind: str = Field(default=RUN_KIND, description="run (a report) or sweep (a parent run)")
    uri: str = Field(description="the tracking URI the run was meant for")
    experiment: str
    artifact_location: str | None = None
    run_id: str | None = Field(default=None, description="the MLflow run, once created")
    run_name: str = ""
    tags: dict[str, str] = Field(default_factory=dict)
    params: dict[str, str] = Field(default_factory=dict)
    sweep_dir: str | None = Field(
        default=None, description="a sweep job's sweep directory (its parent run's record)"
    )
    sweep: dict[str, Any] = Field(
        default_factory=dict, description="a sweep's optimized metric and suite (its summary)"
    )
    start_time: int | None = Field(default=None, description="ms since the epoch")
    status: str | None = Field(default=None, description="final MLflow status; None: running")
    synced: bool = Field(default=False, description="MLflow holds everything logged so far")
    reason: str = Field(default="", description="why the last attempt to log failed")
    updated_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


def read_record(directory: Path) -> TrackingRecord | None:
    """The record of a run (or sweep) directory; None when it has none or it is unreadable."""
    try:
        return TrackingRecord.model_validate_json((Path(directory) / RECORD_FILE).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def write_record(directory: Path, record: TrackingRecord) -> TrackingRecord:
    """Write the record atomically (a crash leaves the previous version or this one)."""
    record = record.model_copy(update={"updated_at": datetime.now(UTC)})
    write_atomically(Path(directory) / RECORD_FILE, record.model_dump_json(indent=1))
    return record
