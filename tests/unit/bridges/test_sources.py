"""What a framework is given and what comes back: segments with provenance metadata, and
retrieved items mapped to our document, page and characters (no framework needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heta_eval.bridges.factory.sources import (
    LostProvenanceError,
    RetrievedItem,
    parse_sources,
    query_result,
    segment_texts,
)
from heta_eval.kb import LocalObjectStore, MediaTypeParser, RawSource
from heta_eval.kb.parsers.base import SEGMENTS_MEDIA_TYPE

PAGES = {
    "segments": [
        {"text": "Revenue grew by 12% in 2013.", "locator": {"page_index": 22}},
        {"text": "   ", "locator": {"page_index": 23}},
        {"text": "Costs fell.", "locator": {"page_index": 24, "section": "Costs"}},
    ]
}


def _store(tmp_path: Path) -> tuple[LocalObjectStore, list[RawSource]]:
    store = LocalObjectStore(tmp_path / "store")
    pages_key = "raw/benchmarks/demo/test/report/report.segments.json"
    store.put(pages_key, json.dumps(PAGES).encode())
    plain_key = "raw/benchmarks/demo/test/note/note.txt"
    store.put(plain_key, b"A short note.")
    bad_key = "raw/benchmarks/demo/test/bad/bad.bin"
    store.put(bad_key, b"\x00\x01")
    return store, [
        RawSource(
            key=pages_key,
            document_id="report",
            media_type=SEGMENTS_MEDIA_TYPE,
            metadata={"title": "Annual report", "document_id": "not ours", "tags": ["x"]},
        ),
        RawSource(key=plain_key, document_id="note"),
        RawSource(key=bad_key, document_id="bad", media_type="application/octet-stream"),
    ]


def test_each_non_blank_segment_is_a_text_with_its_provenance(tmp_path: Path) -> None:
    store, sources = _store(tmp_path)
    parsed = parse_sources(MediaTypeParser(), store, sources)
    assert parsed.documents == 2 and len(parsed.texts) == 3  # the blank page left out
    assert list(parsed.errors) == ["bad"] and "no parser" in parsed.errors["bad"]
    first, costs, note = parsed.texts
    assert first.text == "Revenue grew by 12% in 2013." and first.key == f"{sources[0].key}#0"
    # Provenance wins over the source's own metadata; nested values are left out.
    assert first.metadata == {
        "title": "Annual report",
        "document_id": "report",
        "source_key": sources[0].key,
        "segment_start_char": 0,
        "page_index": 22,
    }
    assert costs.metadata["page_index"] == 24 and costs.metadata["section"] == "Costs"
    assert costs.key.endswith("#2")
    assert note.metadata == {
        "document_id": "note",
        "source_key": sources[1].key,
        "segment_start_char": 0,
    }


def test_a_retrieved_chunk_maps_back_to_the_characters_of_the_parsed_text(
    tmp_path: Path,
) -> None:
    store, sources = _store(tmp_path)
    parser = MediaTypeParser()
    whole = parser.parse(sources[0], store.get(sources[0].key)).text
    (costs,) = [
        t
        for t in segment_texts(parser.parse(sources[0], store.get(sources[0].key)))
        if t.metadata.get("section")
    ]
    # A framework split "Costs fell." and returned its second word, 6 characters in.
    item = RetrievedItem(text="fell.", metadata=dict(costs.metadata), offset=6, item_id="c1")
    result = query_result(item, rank=2)
    source = result.source
    assert whole[source.start_char : source.end_char] == "fell."
    assert (result.id, source.chunk_id, source.document_id) == ("c1", "c1", "report")
    assert source.page_index == 24 and source.metadata["section"] == "Costs"
    # Without a score the rank gives one; without an id the offsets do.
    assert result.score == pytest.approx(1 / 3) and source.metadata["score"] == "rank"
    unnamed = query_result(RetrievedItem(text="fell.", metadata=costs.metadata, offset=6), 0)
    assert unnamed.id == f"report@{source.start_char}" and unnamed.source.chunk_id is None
    scored = query_result(RetrievedItem(text="x", metadata=costs.metadata, score=7.5), 0)
    assert scored.score == 7.5 and scored.source.start_char is None
    assert scored.id == "report#0" and scored.source.metadata["score"] == "framework"


def test_an_item_that_lost_our_metadata_is_refused_with_the_reason() -> None:
    with pytest.raises(LostProvenanceError, match="must keep the metadata"):
        query_result(RetrievedItem(text="t", metadata={"file_name": "a.txt"}), 0)
