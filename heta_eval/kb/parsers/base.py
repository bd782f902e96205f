"""Parsers turn the bytes of a raw source into text segments with provenance."""

from __future__ import annotations

import codecs
import fnmatch
import json
from collections.abc import Mapping
from typing import Any, Protocol

from heta_eval.kb.documents import ParsedSource, RawSource, Segment

SEGMENTS_MEDIA_TYPE = "application/vnd.heta.segments+json"
"""Pre-segmented text: `{"segments": [{"text": "...", "locator": {...}}, ...]}`."""


class ParseError(ValueError):
    """A raw source whose bytes cannot be parsed; recorded as a document error."""


class Parser(Protocol):
    """Turns one raw source into a ParsedSource."""

    def parse(self, source: RawSource, data: bytes) -> ParsedSource: ...


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


def join_segments(source: RawSource, parts: list[tuple[str, Mapping[str, Any]]]) -> ParsedSource:
    """One ParsedSource from (text, locator) parts, joined by blank lines."""
    text_parts: list[str] = []
    segments: list[Segment] = []
    offset = 0
    for text, locator in parts:
        if text_parts:
            text_parts.append("\n\n")
            offset += 2
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


class PlainTextParser(TextParser):
    """Decodes text sources (`text/*`, JSON) into one segment covering the whole text.

    A UTF-8 byte-order mark is dropped. Bytes that do not decode with `encoding` raise a
    ParseError naming the source key and byte offset, unless `errors="replace"`.
    """

    def parse(self, source: RawSource, data: bytes) -> ParsedSource:
        return join_segments(source, [(self.decode(source, data), {})])


class SegmentsJsonParser:
    """Reads pre-segmented documents (`application/vnd.heta.segments+json`).

    The adapter has already split the document into blocks with provenance — a page's text,
    each table row with `table_id`/`row_index` — and chunks never cross them.
    """

    def parse(self, source: RawSource, data: bytes) -> ParsedSource:
        try:
            payload = json.loads(decode_text(source, data, "utf-8", "strict"))
            items = payload["segments"]
            parts = [(str(item["text"]), dict(item.get("locator") or {})) for item in items]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ParseError(
                f"{source.key}: expected {{'segments': [{{'text': ..., 'locator': ...}}]}} "
                f"({type(exc).__name__}: {exc})"
            ) from None
        return join_segments(source, parts)


class PdfParser:
    """Extracts PDF text page by page with pypdf; each page is a segment.

    Provenance: `page_index` is 0-based (the first page is 0), so "page 59" of a report in
    1-based numbering has `page_index=58`. Empty pages yield no chunk. An unreadable PDF
    raises ParseError (recorded as a document error; the rest of the unit builds).
    """

    def __init__(self, extraction_mode: str = "plain") -> None:
        if extraction_mode not in ("plain", "layout"):
            raise ValueError(
                f"extraction_mode must be 'plain' or 'layout', got {extraction_mode!r}"
            )
        self.extraction_mode = extraction_mode

    def parse(self, source: RawSource, data: bytes) -> ParsedSource:
        import io
        import logging

        import pypdf

        # pypdf reports recoverable oddities of real-world PDFs as warnings on its logger.
        logging.getLogger("pypdf").setLevel(logging.ERROR)
        try:
            reader = pypdf.PdfReader(io.BytesIO(data))
            pages = [
                page.extract_text(extraction_mode=self.extraction_mode) or ""
                for page in reader.pages
            ]
        except Exception as exc:
            raise ParseError(
                f"{source.key}: unreadable PDF ({type(exc).__name__}: {exc})"
            ) from None
        return join_segments(source, [(text, {"page_index": i}) for i, text in enumerate(pages)])


class MediaTypeParser:
    """Chooses a parser by media type from `parsers` (glob patterns such as `text/*`).

    The first matching pattern wins; an unmatched media type raises ParseError naming the
    key, its media type and the types this recipe reads.
    """

    def __init__(self, parsers: Mapping[str, Parser] | None = None) -> None:
        if parsers is None:
            from heta_eval.kb.parsers.markup import HtmlParser, MarkdownParser
            from heta_eval.kb.parsers.tables import DelimitedTableParser, JsonRecordsParser

            # First match wins: specific text types come before the `text/*` fallback.
            parsers = {
                "text/markdown": MarkdownParser(),
                "text/html": HtmlParser(),
                "text/csv": DelimitedTableParser(),
                "text/tab-separated-values": DelimitedTableParser(),
                "text/*": PlainTextParser(),
                "application/json": JsonRecordsParser(),
                "application/x-ndjson": JsonRecordsParser(),
                "application/jsonl": JsonRecordsParser(),
                "application/pdf": PdfParser(),
                SEGMENTS_MEDIA_TYPE: SegmentsJsonParser(),
            }
        self.parsers: dict[str, Parser] = dict(parsers)
        self._chosen: dict[str, Parser] = {}  # media type -> the first matching parser

    def parse(self, source: RawSource, data: bytes) -> ParsedSource:
        parser = self._chosen.get(source.media_type)
        if parser is None:
            for pattern, candidate in self.parsers.items():
                if fnmatch.fnmatchcase(source.media_type, pattern):
                    parser = self._chosen[source.media_type] = candidate
                    break
        if parser is not None:
            return parser.parse(source, data)
        raise ParseError(
            f"{source.key}: no parser for media type {source.media_type!r}; "
            f"this recipe reads {sorted(self.parsers)}"
        )
