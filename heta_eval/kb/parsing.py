"""Parsers turn the bytes of a raw source into text segments with provenance."""

from __future__ import annotations

import codecs
from typing import Protocol

from heta_eval.kb.documents import ParsedSource, RawSource, Segment


class ParseError(ValueError):
    """A raw source whose bytes cannot be parsed; recorded as a document error."""


class Parser(Protocol):
    """Turns one raw source into a ParsedSource."""

    def parse(self, source: RawSource, data: bytes) -> ParsedSource: ...


class PlainTextParser:
    """Decodes text sources (`text/*`) into one segment covering the whole text.

    A UTF-8 byte-order mark is dropped. Bytes that do not decode with `encoding` raise a
    ParseError naming the source key and byte offset, unless `errors="replace"`.
    """

    def __init__(self, encoding: str = "utf-8", errors: str = "strict") -> None:
        codecs.lookup(encoding)
        self.encoding = encoding
        self.errors = errors

    def accepts(self, media_type: str) -> bool:
        """Whether this parser reads `media_type`."""
        return media_type.startswith("text/") or media_type in {"application/json"}

    def parse(self, source: RawSource, data: bytes) -> ParsedSource:
        if not self.accepts(source.media_type):
            raise ParseError(
                f"{source.key}: PlainTextParser cannot read media type {source.media_type!r}"
            )
        if data.startswith(codecs.BOM_UTF8) and self.encoding.replace("-", "").lower() == "utf8":
            data = data[len(codecs.BOM_UTF8) :]
        try:
            text = data.decode(self.encoding, errors=self.errors)
        except UnicodeDecodeError as exc:
            raise ParseError(
                f"{source.key}: not valid {self.encoding} at byte {exc.start} ({exc.reason})"
            ) from None
        return ParsedSource(
            source_key=source.key,
            document_id=source.document_id,
            media_type=source.media_type,
            text=text,
            segments=(Segment(start_char=0, end_char=len(text)),),
            metadata=source.metadata,
        )
