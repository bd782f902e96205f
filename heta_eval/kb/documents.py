"""Records inside a knowledge base build: raw sources, parsed sources and chunks."""

from __future__ import annotations

from pydantic import Field, model_validator

from heta_eval.records._base import JsonDict, NonEmptyStr, Record


class RawSource(Record):
    """A raw object in the store that a knowledge base is built from."""

    key: NonEmptyStr
    document_id: NonEmptyStr
    media_type: NonEmptyStr = "text/plain"
    sha256: str | None = Field(default=None, description="digest of the bytes, for cache keys")
    metadata: JsonDict = Field(default_factory=dict)


class Segment(Record):
    """A span of a parsed text that chunks never cross (a page, a section, a table row).

    `locator` carries its provenance, e.g. `{"page_index": 3}`.
    """

    start_char: int = Field(ge=0)
    end_char: int = Field(ge=0)
    locator: JsonDict = Field(default_factory=dict)

    @model_validator(mode="after")
    def _ordered(self) -> Segment:
        if self.end_char < self.start_char:
            raise ValueError("segment end_char precedes start_char")
        return self


class ParsedSource(Record):
    """Text extracted from one raw source, split into provenance-carrying segments."""

    source_key: NonEmptyStr
    document_id: NonEmptyStr
    media_type: NonEmptyStr
    text: str
    segments: tuple[Segment, ...]
    metadata: JsonDict = Field(default_factory=dict)


class Chunk(Record):
    """A retrievable piece of a parsed source with its character offsets in that source."""

    chunk_id: NonEmptyStr
    chunk_index: int = Field(ge=0)
    document_id: NonEmptyStr
    source_key: NonEmptyStr
    text: str
    start_char: int = Field(ge=0)
    end_char: int = Field(ge=0)
    locator: JsonDict = Field(default_factory=dict)
