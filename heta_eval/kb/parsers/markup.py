"""Parsers for marked-up text: Markdown by section, HTML by section and table row."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from heta_eval.kb.documents import ParsedSource, RawSource
from heta_eval.kb.parsers.base import TextParser, join_segments

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SPACE = re.compile(r"\s+")


def _section_path(stack: list[tuple[int, str]], level: int, title: str) -> str:
    """Push heading `title` at `level` onto `stack` (dropping deeper ones); its path."""
    while stack and stack[-1][0] >= level:
        stack.pop()
    stack.append((level, title))
    return " > ".join(t for _, t in stack)


class MarkdownParser(TextParser):
    """Splits Markdown (`text/markdown`) into sections: one segment per heading and its body.

    Locator: `{"section": "Heading > Subheading", "heading_level": n}` — the titles of the
    enclosing ATX headings (`#` … `######`) and this heading's level. Text before the first
    heading is its own section, `{"section": "", "heading_level": 0}`. Segment text is the
    Markdown source verbatim (heading line included, outer blank lines dropped); fenced code
    blocks (``` or ~~~) are kept whole and a `#` inside a fence is not a heading. Setext
    headings (underlined with `===`/`---`) are not recognised.
    """

    def parse(self, source: RawSource, data: bytes) -> ParsedSource:
        text = self.decode(source, data)
        parts: list[tuple[str, dict[str, Any]]] = []
        stack: list[tuple[int, str]] = []
        locator: dict[str, Any] = {"section": "", "heading_level": 0}
        lines: list[str] = []
        fence: str | None = None

        def flush() -> None:
            body = "\n".join(lines).strip("\n")
            if body.strip():
                parts.append((body.rstrip(), locator))

        for line in text.splitlines():
            if fence is not None:
                stripped = line.strip()
                if stripped.startswith(fence) and not stripped.strip(fence[0]):
                    fence = None
            elif match := _FENCE.match(line):
                fence = match.group(1)
            elif match := _ATX.fullmatch(line):
                flush()
                level = len(match.group(1))
                title = _SPACE.sub(" ", match.group(2) or "").strip()
                locator = {"section": _section_path(stack, level, title), "heading_level": level}
                lines = []
            lines.append(line)
        flush()
        return join_segments(source, parts)


_SKIP = frozenset({"script", "style", "head", "template", "noscript"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "br", "dd", "details", "div",
        "dl", "dt", "figcaption", "figure", "footer", "form", "header", "hr", "li", "main",
        "nav", "ol", "p", "pre", "section", "summary", "ul", "caption",
    }
)  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}


class _Table:
    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.rows: list[list[tuple[str, bool]]] = []  # cells as (text, is_th)
        self.row: list[tuple[str, bool]] | None = None
        self.cell: list[str] | None = None
        self.cell_is_th = False
        self.in_thead = False
        self.header_rows: set[int] = set()

    def end_cell(self) -> None:
        if self.cell is not None and self.row is not None:
            self.row.append((_SPACE.sub(" ", "".join(self.cell)).strip(), self.cell_is_th))
        self.cell = None

    def end_row(self) -> None:
        self.end_cell()
        if self.row is not None:
            if self.in_thead:
                self.header_rows.add(len(self.rows))
            self.rows.append(self.row)
        self.row = None

    def segments(self) -> list[tuple[str, dict[str, Any]]]:
        self.end_row()
        rows = [r for r in self.rows if r]
        header: list[str] = []
        if rows and (
            0 in self.header_rows or all(is_th for _, is_th in rows[0])
        ):  # the first row is a header when it is in <thead> or all <th>
            header = [text for text, _ in rows[0]]
            rows = rows[1:]
        parts = []
        for index, row in enumerate(rows):
            fields = []
            for column, (value, _) in enumerate(row):
                if not value:
                    continue
                name = header[column] if column < len(header) else ""
                fields.append(f"{name} = {value}" if name else value)
            if fields:
                parts.append(("; ".join(fields), {"table_id": self.table_id, "row_index": index}))
        return parts


class _HtmlText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[tuple[str, dict[str, Any]]] = []
        self.skip: list[str] = []
        self.stack: list[tuple[int, str]] = []
        self.locator: dict[str, Any] = {"section": "", "heading_level": 0}
        self.blocks: list[str] = []  # finished blocks of the current section
        self.buffer: list[str] = []  # the block being read
        self.buffer_pre = False
        self.pre = 0
        self.heading: tuple[int, list[str]] | None = None
        self.tables: list[_Table] = []
        self.table_count = 0

    # -- text sinks --------------------------------------------------------------------
    def end_block(self) -> None:
        text = "".join(self.buffer)
        text = text.strip("\n").rstrip() if self.buffer_pre else _SPACE.sub(" ", text).strip()
        if text:
            self.blocks.append(text)
        self.buffer = []
        self.buffer_pre = False

    def end_section(self) -> None:
        self.end_block()
        if self.blocks:
            self.parts.append(("\n".join(self.blocks), self.locator))
        self.blocks = []

    def end_heading(self) -> None:
        assert self.heading is not None
        level, words = self.heading
        title = _SPACE.sub(" ", "".join(words)).strip()
        self.heading = None
        self.locator = {"section": _section_path(self.stack, level, title), "heading_level": level}
        if title:
            self.blocks.append(title)

    # -- parser callbacks --------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skip == ["head"] and tag == "body":
            self.skip = []  # </head> left out
        if self.skip:
            if tag in _SKIP:
                self.skip.append(tag)
            return
        if tag in _SKIP:
            self.skip.append(tag)
            return
        if tag == "body":
            return
        if self.heading is not None and (tag in _BLOCK or tag in _HEADINGS or tag == "table"):
            self.end_heading()  # a block inside an unclosed heading ends it
        table = self.tables[-1] if self.tables else None
        if tag == "table":
            if table is None:
                self.end_section()
            elif table.cell is not None:
                table.cell.append(" ")
            self.tables.append(_Table(f"table_{self.table_count}"))
            self.table_count += 1
        elif table is not None:
            if tag == "thead":
                table.in_thead = True
            elif tag in ("tbody", "tfoot"):
                table.in_thead = False
            elif tag == "tr":
                table.end_row()
                table.row = []
            elif tag in ("td", "th"):
                table.end_cell()
                if table.row is None:
                    table.row = []
                table.cell = []
                table.cell_is_th = tag == "th"
            elif table.cell is not None and (tag in _BLOCK or tag in _HEADINGS):
                table.cell.append(" ")
        elif tag in _HEADINGS:
            self.end_section()
            self.heading = (_HEADINGS[tag], [])
        elif tag in _BLOCK:
            self.end_block()
            if tag == "pre":
                self.pre += 1

    def handle_endtag(self, tag: str) -> None:
        if self.skip:
            if tag in self.skip:
                while self.skip.pop() != tag:
                    pass
            return
        table = self.tables[-1] if self.tables else None
        if tag == "table" and table is not None:
            self.tables.pop()
            self.parts.extend(table.segments())
        elif table is not None:
            if tag == "thead":
                table.end_row()
                table.in_thead = False
            elif tag == "tr":
                table.end_row()
            elif tag in ("td", "th"):
                table.end_cell()
            elif table.cell is not None and (tag in _BLOCK or tag in _HEADINGS):
                table.cell.append(" ")
        elif tag in _HEADINGS and self.heading is not None:
            self.end_heading()
        elif tag in _BLOCK:
            self.end_block()
            if tag == "pre" and self.pre:
                self.pre -= 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _SKIP:  # <br/>, <img/>: a self-closed tag opens and closes at once
            self.handle_starttag(tag, attrs)
            if tag not in _VOID:
                self.handle_endtag(tag)

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.tables:
            table = self.tables[-1]
            if table.cell is not None:
                table.cell.append(data)
            return  # text between cells (whitespace, stray text) is not a row's
        if self.heading is not None:
            self.heading[1].append(data)
        else:
            self.buffer.append(data)
            self.buffer_pre = self.buffer_pre or self.pre > 0

    def finish(self) -> list[tuple[str, dict[str, Any]]]:
        self.close()
        self.skip = []
        while self.tables:
            self.handle_endtag("table")
        if self.heading is not None:
            self.end_heading()
        self.end_section()
        return self.parts


class HtmlParser(TextParser):
    """Extracts the visible text of HTML (`text/html`) by section and table row.

    Dropped: `<script>`, `<style>`, `<head>` (and so `<title>`), `<template>`, `<noscript>`
    and comments. Headings `<h1>`…`<h6>` start sections like Markdown's:
    `{"section": "Heading > Subheading", "heading_level": n}` (text before the first heading
    is section `""`, level 0); block elements become lines, other whitespace collapses,
    `<pre>` keeps its own.

    Each `<table>` becomes one segment per data row, `"header1 = v1; header2 = v2"` (empty
    cells skipped; without a header row, or beyond it, bare values), with locator
    `{"table_id": "table_<n>", "row_index": i}`: tables are numbered from 0 in the order they
    open, rows from 0 after the header row (the first row, when it is in `<thead>` or all
    `<th>`); a data row with no text keeps its number but yields no segment. A nested table
    is its own table (its rows come before those of the table around it, and its text is
    not repeated in the outer cell). `colspan`/`rowspan` are ignored.
    """

    def parse(self, source: RawSource, data: bytes) -> ParsedSource:
        reader = _HtmlText()
        reader.feed(self.decode(source, data))
        return join_segments(source, reader.finish())
