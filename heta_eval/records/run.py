"""Records of how a report was produced: its identity, settings, units, caches and timings.

`RunFacts` is the typed part of an `EvaluationReport` that the runner writes and the
console, the tracker, the HTML report and comparisons read (it replaced a loose dict).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from heta_eval.records._base import JsonDict, NonEmptyStr, Record


class RunIdentity(Record):
    """What makes two evaluations the same: digests of the result-shaping configuration, of
    the benchmark's data (every document's bytes, every case and unit, the manifest) and of
    the code (heta_eval's source, the result-shaping libraries' versions, the source of
    components from outside heta_eval). Same `digest`: the same result."""

    digest: NonEmptyStr
    config: NonEmptyStr
    data: NonEmptyStr
    code: NonEmptyStr


class UnitFacts(Record):
    """One run unit as it was evaluated."""

    unit_id: NonEmptyStr
    documents: int = Field(ge=0)
    cases: int = Field(ge=0)
    build_seconds: float | None = None
    build_failed: bool = False


class CaseCounts(Record):
    """How many cases the benchmark has, were evaluated, and how many results failed."""

    total: int = Field(ge=0)
    evaluated: int = Field(ge=0)
    failed: int = Field(ge=0)
    scored: int = Field(ge=0)


class TrackingRef(Record):
    """The tracking run that holds this report (None fields: tracking disabled).

    `where` (how to open it: a URL, or the command that opens the UI) is filled in on the
    report `evaluate()` returns, once the run has ended; it is never written to files."""

    uri: str | None = None
    run_id: str | None = None
    where: str = Field(default="", exclude=True)


class ReusedFrom(Record):
    """The earlier evaluation whose result a run reused (same identity)."""

    report_id: NonEmptyStr
    finished_at: datetime
    tracking_uri: str | None = None
    tracking_run_id: str | None = None


class BenchmarkLoadReuse(Record):
    """A sweep job that did not read its benchmark: it reused what an earlier job of the
    same sweep process loaded (same benchmark configuration), after checking that none of
    the files that load read had changed since (path, size, mtime, ctime and inode)."""

    job: int | None = Field(default=None, description="the sweep job that read the benchmark")
    files_checked: int = Field(ge=0, description="files and directories found unchanged")


class RunFacts(Record):
    """How a report came to be: identity, depth, sampling, units, caches, timings, counts."""

    identity: RunIdentity | None = None
    evaluators: tuple[str, ...] = ()
    top_k: int = Field(gt=0)
    limit: int | None = None
    seed: int = 0
    workers: int = Field(default=1, ge=1)
    run_units: tuple[UnitFacts, ...] = ()
    document_keys: dict[str, str] = Field(default_factory=dict)
    document_errors: dict[str, str] = Field(default_factory=dict)
    cache: JsonDict = Field(
        default_factory=dict, description="build/response cache counters and the cache mode"
    )
    resumed_cases: int = Field(default=0, ge=0)
    retried_cases: int = Field(
        default=0, ge=0, description="failed results of an earlier attempt evaluated again"
    )
    timings_seconds: dict[str, float] = Field(default_factory=dict)
    cases: CaseCounts
    output_dir: str | None = None
    tracking: TrackingRef = Field(default_factory=TrackingRef)
    reused_from: ReusedFrom | None = None
    benchmark_load_reused: BenchmarkLoadReuse | None = Field(
        default=None,
        description="set when the benchmark's documents and cases (and their digest) came "
        "from an earlier job of the same sweep process, its files unchanged",
    )
