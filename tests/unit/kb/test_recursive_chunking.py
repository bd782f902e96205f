"""The parts of recipe=uda_baseline, worked by hand: recursive chunking and Okapi BM25."""

from __future__ import annotations

import math

import pytest

from heta_eval.config.compose import compose_config
from heta_eval.kb.documents import Chunk, ParsedSource, Segment
from heta_eval.kb.index.okapi import OkapiBM25Index, okapi_tokens
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


def _chunks(*texts: str) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=f"d#{i}",
            chunk_index=i,
            document_id="d",
            source_key="raw/d",
            text=t,
            start_char=0,
            end_char=len(t),
        )
        for i, t in enumerate(texts)
    ]


def test_okapi_scores_as_rank_bm25_does() -> None:
    assert okapi_tokens("The U.S. economy, in 2019!") == ["the", "us", "economy", "in", "2019"]
    index = OkapiBM25Index(k1=1.5, b=0.75, epsilon=0.25).build(_chunks("a b", "a c", "d"))
    # N = 3, lengths 2, 2, 1 (mean 5/3). idf(b) = ln(2.5 / 1.5); "a" is in 2 of 3 chunks, so
    # its idf ln(1.5 / 2.5) < 0 becomes 0.25 x the mean idf (-x + 3x) / 4 = x / 2, x = ln(5/3).
    x = math.log(5 / 3)
    tf_part = 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / (5 / 3)))
    (hits,) = index.search(["b"], top_k=3)
    assert hits[0][0] == 0 and hits[0][1] == pytest.approx(x * tf_part)
    # Every chunk is ranked, zero scores included, ties in chunk order (the baseline's top-k).
    assert [p for p, _ in hits] == [0, 1, 2] and hits[1][1] == hits[2][1] == 0.0
    (hits,) = index.search(["a a"], top_k=2)  # a repeated query word counts twice
    assert [p for p, _ in hits] == [0, 1]
    assert hits[0][1] == pytest.approx(2 * 0.25 * (x / 2) * tf_part)


def test_okapi_index_saves_and_loads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    builder = OkapiBM25Index()
    built = builder.build(_chunks("kelp forests", "coral reefs", "kelp and otters"))
    built.save(tmp_path / "okapi")
    loaded = builder.load(tmp_path / "okapi")
    assert loaded.search(["kelp otters"], 3) == built.search(["kelp otters"], 3)


def test_the_recipe_composes_the_authors_settings() -> None:
    recipe = compose_config(["recipe=uda_baseline"]).recipe
    assert recipe.chunker.chunk_size == 3000 and recipe.chunker.chunk_overlap == 300
    assert list(recipe.chunker.separators) == ["\n\n", "\n", " ", ""]
    assert recipe.chunker.across_segments is True
    assert recipe.parser.parsers["application/pdf"].page_separator == ""
    assert (recipe.indexes.bm25.k1, recipe.indexes.bm25.b) == (1.5, 0.75)
