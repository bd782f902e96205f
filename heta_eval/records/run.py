"""Records of how a report was produced: its identity, settings, units, caches and timings.

`RunFacts` is the typed part of an `EvaluationReport` that the runner writes and the
console, the tracker, the HTML report and comparisons read (it replaced a loose dict).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from itertools import islice
from typing import Any

from pydantic import Field, field_validator

from heta_eval.records._base import JsonDict, NonEmptyStr, Record
from heta_eval.redaction import mask_url_credentials


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

    @field_validator("uri")
    @classmethod
    def _masked(cls, value: str | None) -> str | None:
        return None if value is None else mask_url_credentials(value)


class ReusedFrom(Record):
    """The earlier evaluation whose result a run reused (same identity)."""

    report_id: NonEmptyStr
    finished_at: datetime
    tracking_uri: str | None = None
    tracking_run_id: str | None = None

    @field_validator("tracking_uri")
    @classmethod
    def _masked(cls, value: str | None) -> str | None:
        return None if value is None else mask_url_credentials(value)


# Documents whose names are looked at to find the name most documents share.
_NAME_SAMPLE = 64


class StoredDocumentKeys(Record):
    """Where a run stored its documents in the object store, as the layout of their keys and
    the exceptions to it, not every key: a million keys in the report cost seconds of
    serialising, sending and validating in every process that reads it.

    A key is `{prefix}{document_id}/{name}` (`prefix` is `raw/benchmarks/{benchmark}/{split}/`);
    most adapters name every document `{document_id}{name_suffix}` (e.g. `.txt`), so only
    the documents named otherwise are listed in `exceptions`. A report of schema 2 or older
    listed every key: read back, they are all exceptions (`prefix` empty, no `name_suffix`).
    `key(document_id)` gives a stored document's key."""

    prefix: str = ""
    name_suffix: str | None = Field(
        default=None,
        description="most documents are stored as `{prefix}{id}/{id}{name_suffix}`; None: "
        "every key is in `exceptions`",
    )
    stored: int = Field(default=0, ge=0, description="how many documents were stored")
    exceptions: dict[str, str] = Field(
        default_factory=dict,
        description="document_id -> key, for the documents whose key does not follow the layout",
    )

    @classmethod
    def of(cls, prefix: str, keys: Mapping[str, str]) -> StoredDocumentKeys:
        """The layout of `keys` (document_id -> key, all under `prefix`): the name suffix
        the first documents share most, and every key that does not follow it."""
        suffixes = Counter(
            key[len(prefix) + 2 * len(doc) + 1 :]
            for doc, key in islice(keys.items(), _NAME_SAMPLE)
            if key.startswith(f"{prefix}{doc}/{doc}")
        )
        if not suffixes:
            return cls(prefix=prefix, stored=len(keys), exceptions=dict(keys))
        suffix = suffixes.most_common(1)[0][0]
        # One pass, no object per document kept (the collector would walk a full heap).
        exceptions = {
            doc: key for doc, key in keys.items() if key != f"{prefix}{doc}/{doc}{suffix}"
        }
        return cls(prefix=prefix, name_suffix=suffix, stored=len(keys), exceptions=exceptions)

    def layout_key(self, document_id: str) -> str | None:
        """The key the layout gives `document_id` (`{prefix}{id}/{id}{name_suffix}`), an
        exception or not; None without a layout. What a case result's retrieved item whose
        `source_key` was left out (schema 4) came from."""
        if self.name_suffix is None:
            return None
        return f"{self.prefix}{document_id}/{document_id}{self.name_suffix}"

    def key(self, document_id: str) -> str | None:
        """The key of a document the run stored (None: a report that listed every key
        and not this one). For an id the run did not store, the key it would have had."""
        listed = self.exceptions.get(document_id)
        if listed is not None or self.name_suffix is None:
            return listed
        return f"{self.prefix}{document_id}/{document_id}{self.name_suffix}"


class RunFacts(Record):
    """How a report came to be: identity, depth, sampling, units, caches, timings, counts."""

    identity: RunIdentity | None = None
    evaluators: tuple[str, ...] = ()
    top_k: int = Field(gt=0)
    limit: int | None = None
    seed: int = 0
    workers: int = Field(default=1, ge=1)
    run_units: tuple[UnitFacts, ...] = ()
    document_keys: StoredDocumentKeys = Field(default_factory=StoredDocumentKeys)
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

    @field_validator("document_keys", mode="before")
    @classmethod
    def _every_key_listed(cls, value: Any) -> Any:
        # Reports before schema 3 listed every stored document's key (document_id -> key;
        # a document may be called "stored"): only strings, where this record has a count.
        if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
            return {"stored": len(value), "exceptions": value}
        return value

    def document_key(self, document_id: str) -> str | None:
        """Where the run stored document `document_id`; None when it could not be stored
        (`document_errors` says why) or is unknown to a report that listed every key."""
        if document_id in self.document_errors:
            return None
        return self.document_keys.key(document_id)
