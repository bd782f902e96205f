"""What every parser shares: the Parser protocol, ParseError, decoding and joining segments."""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from heta_eval.kb.documents import ParsedSource, RawSource, Segment
from heta_eval.records.benchmark import SEGMENTS_MEDIA_TYPE as SEGMENTS_MEDIA_TYPE

"""Pre-segmented text: `{"segments": [{"text": "...", "locator": {...}}, ...]}`."""


class ParseError(ValueError):
    """A raw source whose bytes cannot be parsed; recorded as a document error."""


@runtime_checkable
class Parser(Protocol):
    """Turns one raw source into a ParsedSource."""

    def parse(self, source: RawSource, data: bytes) -> ParsedSource: ...


def not_a_parser(obj: object) -> str | None:
    """Why `obj` is not a Parser (None when it is one): what it is and what it lacks."""
    if isinstance(obj, Parser):
        return None
    return (
        f"{type(obj).__module__}.{type(obj).__qualname__} is not a parser: it has no "
        "parse(source, data) method (heta_eval.kb.parsers.base.Parser)"
    )


def decode_text(source: RawSource, data: bytes, encoding: str, errors: str) -> str:
    """Decode bytes, dropping a UTF-8 byte-order mark; errors name the key and byte offset."""
    if data.startswith(codecs.BOM_UTF8) and codecs.lookup(encoding).name == "utf-8":
        data = data[len(codecs.BOM_UTF8) :]
    try:
        return data.decode(encoding, errors=errors)
    except UnicodeDecodeError as exc:
        raise ParseError(
            f"{source.key}: not valid {encoding} at byte {exc.start} ({exc.reason})"
        ) from None


def join_segments(
    source: RawSource, parts: list[tuple[str, Mapping[str, Any]]], separator: str = "\n\n"
) -> ParsedSource:
    """One ParsedSource from (text, locator) parts, joined by `separator` (a blank line)."""
    text_parts: list[str] = []
    segments: list[Segment] = []
    offset = 0
    for text, locator in parts:
        if text_parts and separator:
            text_parts.append(separator)
            offset += len(separator)
        text_parts.append(text)
        segments.append(
            Segment(start_char=offset, end_char=offset + len(text), locator=dict(locator))
        )
        offset += len(text)
    return ParsedSource(
        source_key=source.key,
        document_id=source.document_id,
        media_type=source.media_type,
        text="".join(text_parts),
        segments=tuple(segments),
        metadata=source.metadata,
    )


class TextParser:
    """Base of the parsers that read text: the encoding and how decoding errors are handled.

    A UTF-8 byte-order mark is dropped. Bytes that do not decode with `encoding` raise a
    ParseError naming the source key and byte offset, unless `errors="replace"`.
    """

    def __init__(self, encoding: str = "utf-8", errors: str = "strict") -> None:
        codecs.lookup(encoding)
        self.encoding = encoding
        self.errors = errors

    def decode(self, source: RawSource, data: bytes) -> str:
        """The source's text."""
        return decode_text(source, data, self.encoding, self.errors)
