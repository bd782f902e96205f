"""recipe=uda_baseline's chunker, worked by hand: recursive character chunking as the UDA
authors configure it (its Okapi BM25 is in tests/unit/kb/index/test_okapi.py)."""

from __future__ import annotations

import pytest

from heta_eval.config.compose import compose_config
from heta_eval.kb.documents import ParsedSource, Segment
from heta_eval.kb.recursive_chunking import RecursiveCharacterChunker


def _parsed(text: str, segments: list[tuple[int, int, dict]] | None = None) -> ParsedSource:
    spans = segments or [(0, len(text), {})]
    return ParsedSource(
        source_key="raw/d",
        document_id="d",
        media_type="text/plain",
        text=text,
        segments=tuple(Segment(start_char=a, end_char=b, locator=loc) for a, b, loc in spans),
    )


def _texts(chunker: RecursiveCharacterChunker, text: str) -> list[str]:
    return [c.text for c in chunker.chunk(_parsed(text))]


def test_splits_on_the_coarsest_separator_then_finer() -> None:
    chunker = RecursiveCharacterChunker(chunk_size=10, chunk_overlap=0)
    # Paragraphs "aaaa bbbb" (9), "\n\ncccc dddd" (11: too long, split on lines then spaces),
    # "\n\neeee" (6); separators stay at the start of the piece after them; chunks are stripped.
    assert _texts(chunker, "aaaa bbbb\n\ncccc dddd\n\neeee") == ["aaaa bbbb", "cccc dddd", "eeee"]


def test_merges_pieces_up_to_the_size_with_overlap() -> None:
    chunker = RecursiveCharacterChunker(chunk_size=10, chunk_overlap=5, separators=[" "])
    # Pieces "one"(3) " two"(4) " three"(6) " four"(5) " five"(5): "one two" is full at
    # " three"; " two" (4 <= 5) stays as overlap. "two three" is full at " four"; the
    # overlap may keep at most 5 characters that still fit with " four": " three" (6) no.
    assert _texts(chunker, "one two three four five") == ["one two", "two three", "four five"]
    # A word longer than a chunk is cut into characters by the last separator "".
    assert _texts(RecursiveCharacterChunker(4, 0), "abcdefghij") == ["abcd", "efgh", "ij"]


def test_chunks_are_exact_spans_and_cross_pages_when_asked() -> None:
    text = "page one text" + "page two"  # pages joined with no separator, as PyPDF2 does
    parsed = _parsed(text, [(0, 13, {"page_index": 0}), (13, 21, {"page_index": 1})])
    within = RecursiveCharacterChunker(chunk_size=100, chunk_overlap=0).chunk(parsed)
    assert [c.text for c in within] == ["page one text", "page two"]
    across = RecursiveCharacterChunker(100, 0, across_segments=True).chunk(parsed)
    assert [(c.text, c.locator) for c in across] == [(text, {"page_index": 0})]
    small = RecursiveCharacterChunker(9, 0, across_segments=True).chunk(parsed)
    assert [(c.text, c.locator["page_index"]) for c in small] == [
        ("page one", 0),
        ("textpage", 0),
        ("two", 1),
    ]
    assert all(text[c.start_char : c.end_char] == c.text for c in small)
    with pytest.raises(ValueError, match="chunk_overlap"):
        RecursiveCharacterChunker(chunk_size=10, chunk_overlap=10)


def test_the_recipe_composes_the_authors_settings() -> None:
    recipe = compose_config(["recipe=uda_baseline"]).recipe
    assert recipe.chunker.chunk_size == 3000 and recipe.chunker.chunk_overlap == 300
    assert list(recipe.chunker.separators) == ["\n\n", "\n", " ", ""]
    assert recipe.chunker.across_segments is True
    assert recipe.parser.parsers["application/pdf"].page_separator == ""
    assert (recipe.indexes.bm25.k1, recipe.indexes.bm25.b) == (1.5, 0.75)
