"""Records of an evaluation: per-case scores and errors, and the final report."""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from heta_eval.files import file_mode
from heta_eval.records._base import JsonDict, NonEmptyStr, Record
from heta_eval.records.benchmark import BenchmarkEvidence, BenchmarkExpected, BenchmarkManifest
from heta_eval.records.query import KnowledgeBaseManifest
from heta_eval.records.run import RunFacts

# 3: `run.document_keys` is the key layout and its exceptions, not every key (2 is read as 3).
# 4: a retrieved item's `source_key` is left out (None) when it is the key the run's
# document key layout gives its document (`EvaluationReport.source_key` gives it back);
# reports of schema 1-3 keep every item's key and read as they are.
REPORT_SCHEMA_VERSION = "4"
_KEYS_IN_EVERY_ITEM = frozenset({"1", "2", "3"})  # schemas whose items left out no key


class EvaluationScore(Record):
    """One metric value for one case.

    `value` is None when the metric does not apply (`skipped_reason` says why) or when it
    could not be decided (`undetermined=True`, e.g. a judge that gave no verdict); neither
    is ever averaged in, and both are counted.
    """

    name: NonEmptyStr
    value: float | None
    skipped_reason: str | None = None
    undetermined: bool = False
    details: JsonDict = Field(default_factory=dict)

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError(f"a score must be a finite number or None, got {value}")
        return value


class EvaluationError(Record):
    """Why a case could not be scored: the stage that failed and the exception."""

    stage: Literal["build", "query", "evaluate"]
    error_type: NonEmptyStr
    message: str
    evaluator: str | None = None


class RetrievedItem(Record):
    """Compact record of one retrieved result kept in a case result (text left out)."""

    id: str
    score: float
    document_id: str
    chunk_id: str | None = None
    source_key: str | None = Field(
        default=None,
        description="the object-store key the item came from; None (schema 4) when it is "
        "the key the run's layout gives `document_id` (`run.document_keys.layout_key`), "
        "which `EvaluationReport.source_key(item)` gives back",
    )
    page_index: int | None = None
    # Where the chunk's text lies in its document's parsed text (exported predictions
    # carry them, so that a replay can cut the same text).
    start_char: int | None = None
    end_char: int | None = None


EVIDENCE_TEXT_CHARS = 1000  # evidence text kept in a case result (reports show it)


def expected_for_report(expected: BenchmarkExpected) -> BenchmarkExpected | None:
    """What a case expected, in the compact form a case result keeps for reports.

    Answers, evidence reference ids and locators are kept; evidence text is cut to
    EVIDENCE_TEXT_CHARS and only scalar metadata (e.g. a BEIR relevance grade) is kept, so
    that large per-case annotations do not inflate every result. None when nothing is expected.
    """
    if not expected.answers and not expected.evidence:
        return None
    evidence = tuple(
        BenchmarkEvidence(
            reference_id=item.reference_id,
            locator=item.locator,
            text=None if item.text is None else item.text[:EVIDENCE_TEXT_CHARS],
            metadata={
                k: v for k, v in item.metadata.items() if isinstance(v, str | int | float | bool)
            },
        )
        for item in expected.evidence
    )
    return BenchmarkExpected(answers=expected.answers, evidence=evidence)


class EvaluationCaseResult(Record):
    """The outcome of one case under one query mode."""

    case_id: NonEmptyStr
    unit_id: NonEmptyStr
    query_mode: NonEmptyStr
    query: str
    labels: dict[str, str] = Field(
        default_factory=dict, description="slice labels from the case, e.g. question_type"
    )
    scores: tuple[EvaluationScore, ...] = ()
    retrieved: tuple[RetrievedItem, ...] = ()
    answer: str | None = None
    expected: BenchmarkExpected | None = Field(
        default=None, description="the case's expected answers and evidence (compact form)"
    )
    latency_seconds: float | None = Field(default=None, ge=0)
    latency_batch_size: int | None = Field(
        default=None,
        ge=1,
        description="how `latency_seconds` was measured: 1, the query alone; N > 1, the "
        "seconds of one call retrieving N queries divided by N (a batch mean, not this "
        "query's own latency); None, not recorded (no latency, or a result that predates it)",
    )
    scoring_seconds: float | None = Field(default=None, ge=0)
    error: EvaluationError | None = None

    def score(self, name: str) -> float | None:
        """Value of metric `name` for this case, or None when absent or skipped."""
        for item in self.scores:
            if item.name == name:
                return item.value
        return None


class ScoreAggregate(Record):
    """One metric over one query mode: mean, spread, 95% bootstrap CI, and case counts.

    `scored` counts the cases the metric could discriminate; `skipped_reasons` says why the
    `skipped` others were not scored (reason -> cases), e.g. a top k that holds the whole
    knowledge base."""

    mean: float | None
    std: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float = 0.95
    scored: int = Field(ge=0)
    skipped: int = Field(ge=0)
    undetermined: int = Field(default=0, ge=0)
    failed: int = Field(ge=0)
    skipped_reasons: dict[str, int] = Field(default_factory=dict)


class EvaluationReport(Record):
    """The final product of a run: what was evaluated, how, and every case's outcome."""

    report_id: NonEmptyStr
    benchmark: BenchmarkManifest
    knowledge_base_name: NonEmptyStr
    knowledge_base_manifests: tuple[KnowledgeBaseManifest, ...]
    recipe_manifest: JsonDict
    query_modes: tuple[str, ...]
    score_summary: dict[str, float]
    score_details: dict[str, ScoreAggregate] = Field(default_factory=dict)
    score_slices: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description='per-slice summaries keyed "{label}={value}", e.g. "question_type=comparison"',
    )
    case_results: tuple[EvaluationCaseResult, ...]
    started_at: datetime
    finished_at: datetime
    schema_version: str = REPORT_SCHEMA_VERSION
    run: RunFacts

    @model_validator(mode="before")
    @classmethod
    def _from_schema_1(cls, data: object) -> object:
        """Reports of schema 1 kept these facts in a loose `metadata` dict."""
        if not isinstance(data, dict) or "run" in data or "metadata" not in data:
            return data
        data = dict(data)
        data.setdefault("schema_version", "1")
        old = dict(data.pop("metadata") or {})
        units = [dict(u) for u in old.get("run_units") or []]
        cases = old.get("cases") or {}
        data["run"] = {
            "evaluators": old.get("evaluators") or (),
            "top_k": old.get("top_k") or 10,
            "limit": old.get("limit"),
            "seed": old.get("seed") or 0,
            "workers": old.get("workers") or 1,
            "run_units": units,
            "document_keys": old.get("document_keys") or {},
            "document_errors": old.get("document_errors") or {},
            "cache": old.get("cache") or {},
            "resumed_cases": old.get("resumed_cases") or 0,
            "timings_seconds": old.get("timings_seconds") or {},
            "cases": {
                "total": cases.get("total", 0),
                "evaluated": cases.get("evaluated", 0),
                "failed": cases.get("failed", 0),
                "scored": cases.get("scored", 0),
            },
        }
        return data

    @property
    def primary_query_mode(self) -> str | None:
        """The query mode that stands for the recipe in headline numbers.

        The recipe's `metadata.primary_query_mode` when it was evaluated, else the last
        evaluated mode (recipes list their fused or final mode last, e.g. `[bm25, dense,
        hybrid]`); None when no mode was evaluated.
        """
        chosen = (self.recipe_manifest.get("metadata") or {}).get("primary_query_mode")
        if chosen in self.query_modes:
            return str(chosen)
        return self.query_modes[-1] if self.query_modes else None

    def source_key(self, item: RetrievedItem) -> str | None:
        """Where a retrieved item of this report came from: its own `source_key`, or, when
        that was left out because the run's key layout gives it (schema 4), that key."""
        if item.source_key is not None or self.schema_version in _KEYS_IN_EVERY_ITEM:
            return item.source_key
        return self.run.document_keys.layout_key(item.document_id)

    @property
    def failed_cases(self) -> tuple[EvaluationCaseResult, ...]:
        """Case results that carry an error."""
        return tuple(r for r in self.case_results if r.error is not None)

    def write_json(self, path: Path) -> Path:
        """Write the report atomically (temp file + rename), so a crash never leaves half a file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        # The bytes of model_dump_json(indent=2), without decoding and encoding them again.
        data = self.__pydantic_serializer__.to_json(self, indent=2)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                os.fchmod(fd, file_mode())
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())  # the rename must not outrun the data to disk
            os.replace(tmp, path)
        except OSError as exc:
            # A full disk: a report already at `path` stays whole; name the file.
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return path

    @classmethod
    def read_json(cls, path: Path) -> EvaluationReport:
        """Load and validate a report written by `write_json`."""
        return cls.model_validate_json(path.read_text(encoding="utf-8"))
