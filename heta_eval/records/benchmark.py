"""Records that a benchmark adapter produces: manifest, documents, cases, run units."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_serializer, field_validator, model_validator

from heta_eval.records._base import (
    JsonDict,
    NonEmptyStr,
    Record,
    check_bare_name,
    check_plain_id,
    check_unique,
)
from heta_eval.redaction import mask_named

BuildScope = Literal["corpus", "case", "group"]


class BenchmarkManifest(Record):
    """Identity of a benchmark: name, version, split, task type and citation metadata."""

    name: NonEmptyStr
    version: NonEmptyStr = "1"
    split: NonEmptyStr = "test"
    task_type: NonEmptyStr = "qa"
    build_scope: BuildScope = "corpus"
    homepage: str | None = None
    license: str | None = None
    citation: str | None = None
    metadata: JsonDict = Field(default_factory=dict)

    @field_validator("name", "split")
    @classmethod
    def _bare(cls, value: str, info: Any) -> str:
        return check_bare_name(value, info.field_name)

    @field_validator("metadata")
    @classmethod
    def _masked(cls, value: JsonDict) -> JsonDict:
        # Masked once here, so that no writer (report, page, state copy, MLflow) sees a
        # secret given as benchmark metadata (`+benchmark.metadata.api_key=...`).
        return mask_named(value)

    @property
    def key(self) -> str:
        """Stable identifier `name/version/split`, used in tags and cache keys."""
        return f"{self.name}/{self.version}/{self.split}"

    @property
    def raw_key_prefix(self) -> str:
        """Where the benchmark's documents are stored: `raw/benchmarks/{name}/{split}/`."""
        return f"raw/benchmarks/{self.name}/{self.split}/"


class BenchmarkResource(Record):
    """An external file a benchmark needs, with the checksum that proves it is the right one."""

    name: NonEmptyStr
    uri: NonEmptyStr
    checksum: str | None = Field(
        default=None,
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="'sha256:<hex digest>' of the file; None when the publisher gives none",
    )
    size_bytes: int | None = Field(default=None, ge=0)
    description: str | None = None

    @field_validator("name")
    @classmethod
    def _bare(cls, value: str) -> str:
        return check_bare_name(value, "name")

    @property
    def sha256(self) -> str | None:
        """The expected sha256 hex digest, if the resource declares one."""
        return self.checksum.removeprefix("sha256:") if self.checksum else None


class BenchmarkWorkspace(Record):
    """Where an adapter may download, extract and cache its data."""

    root: Path
    offline: bool = False


class PreparedBenchmark(Record):
    """What `prepare()` located or downloaded: the data directory and named paths in it."""

    manifest: BenchmarkManifest
    root: Path
    paths: dict[str, Path] = Field(default_factory=dict)
    metadata: JsonDict = Field(default_factory=dict)


# A document given as pre-split segments (JSON), each with its provenance: what an adapter
# yields when the benchmark ships its documents already parsed (UDA's tables and pages).
SEGMENTS_MEDIA_TYPE = "application/vnd.heta.segments+json"


class BenchmarkDocument(Record):
    """One raw document; exactly one of `data`, `path` and `source_uri` carries its bytes."""

    document_id: NonEmptyStr
    name: NonEmptyStr
    media_type: NonEmptyStr = "text/plain"
    data: bytes | None = None
    path: Path | None = None
    source_uri: str | None = None
    metadata: JsonDict = Field(default_factory=dict)

    @field_validator("document_id")
    @classmethod
    def _id_is_bare(cls, value: str) -> str:
        return check_bare_name(value, "document_id")

    @field_validator("name")
    @classmethod
    def _name_is_bare(cls, value: str) -> str:
        return check_bare_name(value, "name")

    @model_validator(mode="after")
    def _exactly_one_source(self) -> BenchmarkDocument:
        # Run for every document read and again when the contents are checked: the common
        # case without building a list (a million documents: ~1 s of the load).
        if (self.data is None) + (self.path is None) + (self.source_uri is None) == 2:
            return self
        given = [f for f in ("data", "path", "source_uri") if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError(
                "exactly one of data, path and source_uri must be set, "
                f"got {', '.join(given) if given else 'none'}"
            )
        return self

    @field_serializer("data", when_used="json")
    def _data_json(self, value: bytes | None) -> str | None:
        # Shown as text when it is UTF-8 text that cannot be mistaken for the marker.
        if value is None:
            return None
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and not text.startswith("base64:"):
            return text
        return "base64:" + base64.b64encode(value).decode("ascii")

    @field_validator("data", mode="before")
    @classmethod
    def _data_from_text(cls, value: Any, info: ValidationInfo) -> Any:
        # A string is text, stored as UTF-8, whatever it starts with (binary content is given
        # as bytes). Only this record's own JSON form carries binary as "base64:...", and
        # there the serializer encodes text with that prefix too, so the marker is exact.
        if isinstance(value, str):
            if info.mode == "json" and value.startswith("base64:"):
                return base64.b64decode(value[len("base64:") :], validate=True)
            return value.encode("utf-8")
        return value

    def raw_key(self, manifest: BenchmarkManifest) -> str:
        """Object-store key `raw/benchmarks/{benchmark}/{split}/{document_id}/{name}`."""
        return f"{manifest.raw_key_prefix}{self.document_id}/{self.name}"


class BenchmarkEvidence(Record):
    """Where an answer is supported: a reference id, an open locator, and/or the text itself."""

    reference_id: str | None = None
    locator: JsonDict = Field(default_factory=dict)
    text: str | None = None
    metadata: JsonDict = Field(default_factory=dict)

    @model_validator(mode="after")
    def _something_to_match(self) -> BenchmarkEvidence:
        if not (self.reference_id or self.locator or self.text):
            raise ValueError("evidence needs at least one of reference_id, locator and text")
        return self


class BenchmarkExpected(Record):
    """Expected outcome of a case: acceptable answers and supporting evidence."""

    answers: tuple[str, ...] = ()
    evidence: tuple[BenchmarkEvidence, ...] = ()
    metadata: JsonDict = Field(default_factory=dict)


class BenchmarkCase(Record):
    """One query evaluation sample."""

    case_id: NonEmptyStr
    query: NonEmptyStr
    expected: BenchmarkExpected = Field(default_factory=BenchmarkExpected)
    metadata: JsonDict = Field(default_factory=dict)

    @field_validator("case_id")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        return check_plain_id(value, "case_id")


class BenchmarkRunUnit(Record):
    """One build-and-evaluate unit: a KB over `document_ids`, queried with `case_ids`.

    Empty `document_ids` means every document of the benchmark; empty `case_ids` every case.
    """

    unit_id: NonEmptyStr
    document_ids: tuple[str, ...] = ()
    case_ids: tuple[str, ...] = ()
    metadata: JsonDict = Field(default_factory=dict)

    @field_validator("unit_id")
    @classmethod
    def _bare(cls, value: str) -> str:
        return check_bare_name(value, "unit_id")

    @field_validator("document_ids", "case_ids")
    @classmethod
    def _no_duplicates(cls, value: tuple[str, ...], info: Any) -> tuple[str, ...]:
        check_unique(list(value), info.field_name)
        return value


class BenchmarkContents(Record):
    """Everything an adapter yielded, checked as a whole before any KB is built.

    Ids must be unique within documents, cases and units, and every unit must name
    documents and cases that exist.
    """

    manifest: BenchmarkManifest
    documents: tuple[BenchmarkDocument, ...]
    cases: tuple[BenchmarkCase, ...]
    units: tuple[BenchmarkRunUnit, ...]

    @field_validator("documents", "cases", "units")
    @classmethod
    def _not_empty(cls, value: tuple[Any, ...], info: Any) -> tuple[Any, ...]:
        if not value:
            raise ValueError(f"the benchmark yielded no {info.field_name}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> BenchmarkContents:
        check_unique([d.document_id for d in self.documents], "document_id")
        check_unique([c.case_id for c in self.cases], "case_id")
        check_unique([u.unit_id for u in self.units], "unit_id")
        known_docs = {d.document_id for d in self.documents}
        known_cases = {c.case_id for c in self.cases}
        for unit in self.units:
            missing_docs = [d for d in unit.document_ids if d not in known_docs]
            missing_cases = [c for c in unit.case_ids if c not in known_cases]
            if missing_docs:
                raise ValueError(
                    f"run unit {unit.unit_id!r} names unknown document_ids: {missing_docs[:5]}"
                )
            if missing_cases:
                raise ValueError(
                    f"run unit {unit.unit_id!r} names unknown case_ids: {missing_cases[:5]}"
                )
        return self

    def unknown_evidence_documents(self) -> dict[str, tuple[str, ...]]:
        """Cases whose evidence locator names a `document_id` the benchmark does not have.

        Keyed by case id, with the unknown document ids in order. Such evidence can never
        be retrieved, so it silently caps recall; `reference_id`s are not checked, as they
        may name chunks or other units rather than documents.
        """
        known = {d.document_id for d in self.documents}
        unknown: dict[str, tuple[str, ...]] = {}
        for case in self.cases:
            missing = [
                str(e.locator["document_id"])
                for e in case.expected.evidence
                if e.locator.get("document_id") is not None
                and str(e.locator["document_id"]) not in known
            ]
            if missing:
                unknown[case.case_id] = tuple(dict.fromkeys(missing))
        return unknown

    def unit_documents(self, unit: BenchmarkRunUnit) -> tuple[BenchmarkDocument, ...]:
        """The documents of `unit` in benchmark order (all of them when it names none)."""
        if not unit.document_ids:
            return self.documents
        wanted = set(unit.document_ids)
        return tuple(d for d in self.documents if d.document_id in wanted)

    def unit_cases(self, unit: BenchmarkRunUnit) -> tuple[BenchmarkCase, ...]:
        """The cases of `unit` in benchmark order (all of them when it names none)."""
        if not unit.case_ids:
            return self.cases
        wanted = set(unit.case_ids)
        return tuple(c for c in self.cases if c.case_id in wanted)
