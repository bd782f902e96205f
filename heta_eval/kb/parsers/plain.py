"""Parsers of plain text and of pre-segmented JSON: the text as it is, or the adapter's blocks."""

from __future__ import annotations

import json

from heta_eval.kb.documents import ParsedSource, RawSource
from heta_eval.kb.parsers.base import ParseError, TextParser, decode_text, join_segments


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
