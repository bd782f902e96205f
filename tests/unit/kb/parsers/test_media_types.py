"""Parsers by media type: plain text, pre-segmented JSON, and PDFs page by page."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from heta_eval.kb import (
    SEGMENTS_MEDIA_TYPE,
    FixedSizeChunker,
    KnowledgeBase,
    LocalObjectStore,
    MediaTypeParser,
    ParseError,
    PdfParser,
    RawSource,
)
from tests.conftest import SHARED, load_recipe

ADI_PDF = SHARED / "datasets" / "uda" / "src_doc_files_example" / "fin_docs" / "ADI_2009.pdf"


def _source(media_type: str, key: str = "raw/b/test/d/d.bin") -> RawSource:
    return RawSource(key=key, document_id="d", media_type=media_type)


def test_segments_json_keeps_locators_and_offsets() -> None:
    payload = {
        "segments": [
            {"text": "intro text", "locator": {"page_index": 3}},
            {"text": "row: a = 1", "locator": {"page_index": 3, "table_id": "t", "row_index": 1}},
        ]
    }
    parsed = MediaTypeParser().parse(_source(SEGMENTS_MEDIA_TYPE), json.dumps(payload).encode())
    assert [parsed.text[s.start_char : s.end_char] for s in parsed.segments] == [
        "intro text",
        "row: a = 1",
    ]
    chunks = FixedSizeChunker(chunk_size=100).chunk(parsed)
    assert [c.locator for c in chunks] == [
        {"page_index": 3},
        {"page_index": 3, "table_id": "t", "row_index": 1},
    ]
    with pytest.raises(ParseError, match=r"d\.bin: expected \{'segments'"):
        MediaTypeParser().parse(_source(SEGMENTS_MEDIA_TYPE), b'{"blocks": []}')


def test_unknown_media_types_name_what_the_recipe_reads() -> None:
    with pytest.raises(
        ParseError, match=r"no parser for media type 'image/png'; this recipe reads \["
    ):
        MediaTypeParser().parse(_source("image/png"), b"\x89PNG")


def test_text_with_a_bom_and_html_as_text() -> None:
    parsed = MediaTypeParser().parse(_source("text/plain"), "\ufeffhello".encode())
    assert parsed.text == "hello"
    assert MediaTypeParser().parse(_source("text/html"), b"<p>hi</p>").text == "hi"


@pytest.mark.slow
def test_pdf_pages_are_segments_with_zero_based_page_index() -> None:
    if not ADI_PDF.is_file():
        pytest.skip("UDA PDFs not available")
    parsed = PdfParser().parse(_source("application/pdf"), ADI_PDF.read_bytes())
    assert len(parsed.segments) == 110
    assert [s.locator["page_index"] for s in parsed.segments[:3]] == [0, 1, 2]
    page_59 = parsed.segments[58]
    # ADI_2009's amortization questions name page_59: the 59th page, page_index 58.
    assert "amortization" in parsed.text[page_59.start_char : page_59.end_char].lower()


def test_an_unreadable_pdf_is_a_document_error_and_the_rest_builds(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    store.put("raw/b/test/bad/bad.pdf", b"%PDF-1.7 this is not really a pdf")
    store.put("raw/b/test/ok/ok.txt", b"kelp forests shelter otters")
    sources = [
        RawSource(key="raw/b/test/bad/bad.pdf", document_id="bad", media_type="application/pdf"),
        RawSource(key="raw/b/test/ok/ok.txt", document_id="ok"),
    ]
    kb = asyncio.run(
        KnowledgeBase.create(recipe=load_recipe(), name="kb", store=store, sources=sources)
    )
    manifest = kb.manifest()
    assert manifest.counts["documents"] == 1 and manifest.counts["document_errors"] == 1
    assert (
        "raw/b/test/bad/bad.pdf: unreadable PDF"
        in manifest.document_errors["raw/b/test/bad/bad.pdf"]
    )
    assert asyncio.run(kb.query("otters", mode="bm25")).results[0].source.document_id == "ok"
