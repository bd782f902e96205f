"""Structured sources (Markdown, HTML, CSV/TSV, JSON records): segments carry provenance,
every offset (of the segments and of the chunks that keep them) indexes the parsed text, and a
knowledge base over them answers with the right row."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from heta_eval.kb import (
    KnowledgeBase,
    LocalObjectStore,
    MediaTypeParser,
    ParsedSource,
    ParseError,
    RawSource,
)
from heta_eval.kb.chunking import SentenceChunker, StructureChunker
from heta_eval.kb.parsers.markup import HtmlParser, MarkdownParser
from heta_eval.kb.parsers.tables import DelimitedTableParser, JsonLinesParser, JsonRecordsParser
from tests.conftest import load_recipe


def _source(media_type: str, key: str = "raw/b/test/d/d.bin", document_id: str = "d") -> RawSource:
    return RawSource(key=key, document_id=document_id, media_type=media_type)


def _parse(media_type: str, text: str) -> ParsedSource:
    parsed = MediaTypeParser().parse(_source(media_type), text.encode())
    _assert_offsets(parsed)
    return parsed


def _assert_offsets(parsed: ParsedSource) -> None:
    for chunk in StructureChunker().chunk(parsed) + SentenceChunker(max_words=5).chunk(parsed):
        assert parsed.text[chunk.start_char : chunk.end_char] == chunk.text


def _segments(parsed: ParsedSource) -> list[tuple[str, dict[str, object]]]:
    return [(parsed.text[s.start_char : s.end_char], dict(s.locator)) for s in parsed.segments]


# -- Markdown ------------------------------------------------------------------------------

MARKDOWN = """Front matter before any heading.

# Installation
Run the installer.

```bash
# this is a shell comment, not a heading
pip install heta
```

## On Windows ##
Use   PowerShell.

~~~
## also not a heading
~~~

# Usage
    # indented code is not a heading either
"""


def test_markdown_sections_keep_their_heading_path_and_fences() -> None:
    parsed = _parse("text/markdown", MARKDOWN)
    assert _segments(parsed) == [
        ("Front matter before any heading.", {"section": "", "heading_level": 0}),
        (
            "# Installation\nRun the installer.\n\n```bash\n"
            "# this is a shell comment, not a heading\npip install heta\n```",
            {"section": "Installation", "heading_level": 1},
        ),
        (
            "## On Windows ##\nUse   PowerShell.\n\n~~~\n## also not a heading\n~~~",
            {"section": "Installation > On Windows", "heading_level": 2},
        ),
        (
            "# Usage\n    # indented code is not a heading either",
            {"section": "Usage", "heading_level": 1},
        ),
    ]
    assert isinstance(MediaTypeParser().parsers["text/markdown"], MarkdownParser)


def test_markdown_heading_levels_pop_back_and_an_unclosed_fence_runs_to_the_end() -> None:
    text = "# A\n### A3\n## B2\ntext\n```\n# inside\n"
    parsed = _parse("text/markdown", text)
    assert [s.locator["section"] for s in parsed.segments] == ["A", "A > A3", "A > B2"]
    assert parsed.text.endswith("```\n# inside")


# -- HTML ----------------------------------------------------------------------------------

HTML = """<!DOCTYPE html>
<html>
<head><title>Annual report</title><style>h1 { color: red }</style>
<script>document.write("<h1>injected</h1>")</script></head>
<body>
<p>Welcome to the
   report.</p>
<!-- <p>a commented-out paragraph</p> -->
<h1>Results &amp; outlook</h1>
<p>Revenue grew.<script>track("revenue")</script></p>
<table>
  <caption>Revenue by year</caption>
  <thead><tr><th>Year</th><th>Revenue</th><th>Note</th></tr></thead>
  <tbody>
    <tr><td>2008</td><td>1,200</td><td></td></tr>
    <tr><td>2009</td><td>1,350</td><td>record <b>high</b></td></tr>
    <tr><td>2010</td><td>
      <table><tr><th>Quarter</th><th>Share</th></tr><tr><td>Q1</td><td>40%</td></tr></table>
      1,500</td><td>estimate</td></tr>
  </tbody>
</table>
<p>More text in the same section.</p>
<h2>Risks</h2>
<template><p>template text is not shown</p></template>
<ul><li>Currency</li><li>Supply</li></ul>
<pre>  line one
    line two</pre>
<table><tr><td>no</td><td>header</td></tr></table>
</body>
</html>
"""


def test_html_visible_text_sections_and_table_rows() -> None:
    parsed = _parse("text/html", HTML)
    assert _segments(parsed) == [
        ("Welcome to the report.", {"section": "", "heading_level": 0}),
        (
            "Results & outlook\nRevenue grew.",
            {"section": "Results & outlook", "heading_level": 1},
        ),
        ("Quarter = Q1; Share = 40%", {"table_id": "table_1", "row_index": 0}),
        ("Year = 2008; Revenue = 1,200", {"table_id": "table_0", "row_index": 0}),
        (
            "Year = 2009; Revenue = 1,350; Note = record high",
            {"table_id": "table_0", "row_index": 1},
        ),
        ("Year = 2010; Revenue = 1,500; Note = estimate", {"table_id": "table_0", "row_index": 2}),
        ("More text in the same section.", {"section": "Results & outlook", "heading_level": 1}),
        (
            "Risks\nCurrency\nSupply\n  line one\n    line two",
            {"section": "Results & outlook > Risks", "heading_level": 2},
        ),
        ("no; header", {"table_id": "table_2", "row_index": 0}),
    ]
    for hidden in ("injected", "track", "commented-out", "template text", "Annual report"):
        assert hidden not in parsed.text
    assert isinstance(MediaTypeParser().parsers["text/html"], HtmlParser)


def test_html_without_closing_tags_still_yields_everything() -> None:
    parsed = HtmlParser().parse(
        _source("text/html"),
        b"<head><title>x</title><body><h3>Open<p>text<table><tr><th>a<tr><td>1",
    )
    assert _segments(parsed) == [
        ("Open\ntext", {"section": "Open", "heading_level": 3}),
        ("a = 1", {"table_id": "table_0", "row_index": 0}),
    ]


# -- CSV / TSV -----------------------------------------------------------------------------


def test_csv_rows_with_quoted_commas_and_empty_values() -> None:
    text = (
        'city,country,population,notes\n"Paris, Île-de-France",France,2100000,\n\n'
        'Lyon,France,,"quoted ""river"" city"\r\nNice,France,340000,,extra\n'
    )
    parsed = _parse("text/csv", text)
    assert _segments(parsed) == [
        (
            "city = Paris, Île-de-France; country = France; population = 2100000",
            {"table_id": "d", "row_index": 0},
        ),
        (
            'city = Lyon; country = France; notes = quoted "river" city',
            {"table_id": "d", "row_index": 1},
        ),
        (
            "city = Nice; country = France; population = 340000; column_5 = extra",
            {"table_id": "d", "row_index": 2},
        ),
    ]


def test_tsv_delimiter_comes_from_the_media_type_unless_given() -> None:
    parsed = _parse("text/tab-separated-values", "a\tb\n1,5\t2\n")
    assert _segments(parsed) == [("a = 1,5; b = 2", {"table_id": "d", "row_index": 0})]
    semicolons = DelimitedTableParser(delimiter=";").parse(_source("text/csv"), b"a;b\n1;2\n")
    assert semicolons.text == "a = 1; b = 2"
    with pytest.raises(ValueError, match="one character"):
        DelimitedTableParser(delimiter="::")


def test_malformed_csv_names_the_key_and_line() -> None:
    with pytest.raises(ParseError, match=r"d\.bin: malformed table at line 3"):
        _parse("text/csv", 'a,b\n1,2\n3,"4"x\n5,6\n')
    with pytest.raises(ParseError, match=r"d\.bin: malformed table at line"):
        _parse("text/csv", 'a,b\n1,"unterminated\n')


# -- JSON records --------------------------------------------------------------------------


def test_json_lines_records_and_bad_lines() -> None:
    lines = [
        json.dumps({"id": 7, "title": "Kelp", "tags": ["sea", "forest"], "extra": None}),
        "",
        json.dumps({"id": 8, "meta": {"lang": "en"}, "ok": True, "empty": ""}),
        json.dumps("a bare string"),
    ]
    parsed = _parse("application/x-ndjson", "\n".join(lines))
    assert _segments(parsed) == [
        ('id = 7; title = Kelp; tags = ["sea", "forest"]', {"row_index": 0}),
        ('id = 8; meta = {"lang": "en"}; ok = true', {"row_index": 1}),
        ("a bare string", {"row_index": 2}),
    ]
    assert _parse("application/jsonl", '{"a": 1}').text == "a = 1"
    with pytest.raises(ParseError, match=r"d\.bin: invalid JSON on line 3"):
        JsonLinesParser().parse(_source("application/jsonl"), b'{"a": 1}\n\n{"a": \n')


def test_json_documents_are_records_only_when_a_list_of_objects() -> None:
    records = _parse("application/json", '[{"q": "why"}, {"q": "how"}]')
    assert _segments(records) == [("q = why", {"row_index": 0}), ("q = how", {"row_index": 1})]
    for plain in ('{"q": "why"}', "[1, 2]", "[]", "not json {"):
        assert _segments(_parse("application/json", plain)) == [(plain, {})]
    assert isinstance(MediaTypeParser().parsers["application/json"], JsonRecordsParser)


def test_the_default_registry_keeps_text_fallback_after_specific_types() -> None:
    patterns = list(MediaTypeParser().parsers)
    fallback = patterns.index("text/*")
    for media_type in ("text/markdown", "text/html", "text/csv", "text/tab-separated-values"):
        assert patterns.index(media_type) < fallback
    assert _parse("text/plain", "# not markdown").text == "# not markdown"


# -- end to end ----------------------------------------------------------------------------


def test_a_knowledge_base_over_csv_and_html_answers_with_the_right_row(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "store")
    documents = {
        "cities": (
            "cities.csv",
            "text/csv",
            "city,country,river\nParis,France,Seine\nVienna,Austria,Danube\nCairo,Egypt,Nile\n",
        ),
        "report": ("report.html", "text/html", HTML),
    }
    sources = []
    for doc_id, (name, media_type, text) in documents.items():
        key = f"raw/benchmarks/t/test/{doc_id}/{name}"
        store.put(key, text.encode())
        sources.append(RawSource(key=key, document_id=doc_id, media_type=media_type))
    kb = asyncio.run(
        KnowledgeBase.create(recipe=load_recipe(), name="kb", store=store, sources=sources)
    )

    top = asyncio.run(kb.query("which river flows through Vienna", mode="bm25", top_k=3))
    first = top.results[0]
    assert first.source.document_id == "cities"
    assert (first.source.table_id, first.source.row_index) == ("cities", 1)
    assert first.text == "city = Vienna; country = Austria; river = Danube"

    top = asyncio.run(kb.query("revenue in 2009 record high", mode="bm25", top_k=3))
    first = top.results[0]
    assert first.source.document_id == "report"
    assert (first.source.table_id, first.source.row_index) == ("table_0", 1)
