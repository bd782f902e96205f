"""Parsers for tabular sources: delimited tables (CSV/TSV) and JSON records, row by row."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from heta_eval.kb.documents import ParsedSource, RawSource
from heta_eval.kb.parsers.base import ParseError, TextParser, join_segments

_DELIMITERS = {"text/tab-separated-values": "\t", "text/tsv": "\t"}


def _value_text(value: Any) -> str:
    """A field value as text: strings as they are, anything else JSON-encoded."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def record_text(record: Any) -> str:
    """`key = value; ...` for an object (null and empty values skipped), else the value."""
    if not isinstance(record, dict):
        return _value_text(record)
    return "; ".join(
        f"{key} = {_value_text(value).strip()}"
        for key, value in record.items()
        if value is not None and _value_text(value).strip()
    )


class DelimitedTableParser(TextParser):
    """Reads delimited tables (`text/csv`, `text/tab-separated-values`): one segment per row.

    The delimiter is `delimiter` when given, else a tab for `text/tab-separated-values` and
    a comma otherwise. The first non-blank row is the header; each later row becomes
    `"column = value; ..."` (values stripped, empty ones skipped; values beyond the header
    are named `column_<n>`, 1-based) with locator `{"table_id": <document_id>,
    "row_index": i}`, `i` counting data rows from 0 (blank lines are not rows).

    Row chunks carry no `column` locator: evidence that names a column matches a row by its
    text, which contains `column = value` (e.g. with `locator_and_text` matching on
    `table_id`/`row_index` plus the value). Malformed CSV (e.g. a stray quote) raises
    ParseError naming the key and line.
    """

    def __init__(
        self, delimiter: str | None = None, encoding: str = "utf-8", errors: str = "strict"
    ) -> None:
        if delimiter is not None and len(delimiter) != 1:
            raise ValueError(f"delimiter must be one character, got {delimiter!r}")
        super().__init__(encoding, errors)
        self.delimiter = delimiter

    def _delimiter(self, media_type: str) -> str:
        if self.delimiter is not None:
            return self.delimiter
        return _DELIMITERS.get(media_type.split(";")[0].strip().lower(), ",")

    def parse(self, source: RawSource, data: bytes) -> ParsedSource:
        text = self.decode(source, data)
        reader = csv.reader(
            io.StringIO(text, newline=""), delimiter=self._delimiter(source.media_type), strict=True
        )
        header: list[str] | None = None
        parts: list[tuple[str, dict[str, Any]]] = []
        try:
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                if header is None:
                    header = [name.strip() or f"column_{n}" for n, name in enumerate(row, start=1)]
                    continue
                names = header + [f"column_{n}" for n in range(len(header) + 1, len(row) + 1)]
                fields = [
                    f"{name} = {value.strip()}"
                    for name, value in zip(names, row, strict=False)
                    if value.strip()
                ]
                locator = {"table_id": source.document_id, "row_index": len(parts)}
                parts.append(("; ".join(fields), locator))
        except csv.Error as exc:
            raise ParseError(
                f"{source.key}: malformed table at line {reader.line_num}: {exc}"
            ) from None
        return join_segments(source, parts)


class JsonRecordsParser(TextParser):
    """Reads JSON records: one segment per record, locator `{"row_index": i}`.

    JSON Lines (`application/x-ndjson`, `application/jsonl`): one record per non-blank line,
    `i` counting records from 0; a line that is not JSON raises ParseError naming the key and
    the (1-based) line. A record that is an object becomes `"key = value; ..."` (nested
    values JSON-encoded, null and empty values skipped); any other value is its JSON text.

    `application/json` (any other media type): a document whose top level is a non-empty
    list of objects is read as records too (`i` is the list index); anything else — other
    JSON, or text that is not JSON at all — stays one plain-text segment, as
    `PlainTextParser` reads it.
    """

    @staticmethod
    def _is_lines(media_type: str) -> bool:
        kind = media_type.split(";")[0].strip().lower()
        return kind in ("application/x-ndjson", "application/jsonl", "application/x-jsonlines")

    def parse(self, source: RawSource, data: bytes) -> ParsedSource:
        text = self.decode(source, data)
        if not self._is_lines(source.media_type):
            try:
                payload = json.loads(text)
            except json.JSONDecodeError:
                payload = None
            if (
                isinstance(payload, list)
                and payload
                and all(isinstance(item, dict) for item in payload)
            ):
                return join_segments(
                    source, [(record_text(r), {"row_index": i}) for i, r in enumerate(payload)]
                )
            return join_segments(source, [(text, {})])
        parts: list[tuple[str, dict[str, Any]]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ParseError(
                    f"{source.key}: invalid JSON on line {number} ({exc.msg} at column {exc.colno})"
                ) from None
            parts.append((record_text(record), {"row_index": len(parts)}))
        return join_segments(source, parts)


JsonLinesParser = JsonRecordsParser
"""The same parser under the name of its most common input."""
