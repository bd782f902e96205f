"""Chunks keep exact character offsets, respect overlap and never cross segments."""

from __future__ import annotations

import pytest

from heta_eval.kb import FixedSizeChunker, ParsedSource, Segment

TEXT = "one two three four five six seven eight nine ten"


def _parsed(text: str = TEXT, segments: tuple[Segment, ...] | None = None) -> ParsedSource:
    return ParsedSource(
        source_key="raw/k/d.txt",
        document_id="d",
        media_type="text/plain",
        text=text,
        segments=segments or (Segment(start_char=0, end_char=len(text)),),
    )


def test_word_windows_with_overlap_have_exact_offsets() -> None:
    chunks = FixedSizeChunker(chunk_size=4, chunk_overlap=1).chunk(_parsed())
    assert [c.text for c in chunks] == [
        "one two three four",
        "four five six seven",
        "seven eight nine ten",
    ]
    for chunk in chunks:
        assert TEXT[chunk.start_char : chunk.end_char] == chunk.text
    assert [c.chunk_id for c in chunks] == ["d#0", "d#1", "d#2"]
    assert [c.chunk_index for c in chunks] == [0, 1, 2]


def test_last_window_is_not_repeated() -> None:
    chunks = FixedSizeChunker(chunk_size=5, chunk_overlap=0).chunk(_parsed())
    assert [c.text for c in chunks] == ["one two three four five", "six seven eight nine ten"]


def test_whole_document_when_chunk_size_is_none() -> None:
    text = "  padded text\n"
    (chunk,) = FixedSizeChunker().chunk(_parsed(text))
    assert chunk.text == "padded text" and (chunk.start_char, chunk.end_char) == (2, 13)


def test_character_windows() -> None:
    chunks = FixedSizeChunker(chunk_size=10, chunk_overlap=2, unit="chars").chunk(_parsed())
    assert all(len(c.text) <= 10 for c in chunks)
    assert chunks[0].text == TEXT[:10] and chunks[1].start_char == 8
    assert chunks[-1].end_char == len(TEXT)


def test_chunks_stay_inside_segments_and_carry_their_locator() -> None:
    text = "page one words\fpage two words"
    segments = (
        Segment(start_char=0, end_char=14, locator={"page_index": 0}),
        Segment(start_char=15, end_char=len(text), locator={"page_index": 1}),
        Segment(start_char=len(text), end_char=len(text), locator={"page_index": 2}),
    )
    chunks = FixedSizeChunker(chunk_size=100).chunk(_parsed(text, segments))
    assert [(c.text, c.locator["page_index"]) for c in chunks] == [
        ("page one words", 0),
        ("page two words", 1),
    ]


def test_blank_text_gives_no_chunks() -> None:
    assert FixedSizeChunker(chunk_size=3).chunk(_parsed("   \n ")) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunk_size": 0}, "positive"),
        ({"chunk_size": 4, "chunk_overlap": 4}, "smaller than chunk_size"),
        ({"chunk_overlap": -1}, ">= 0"),
        ({"unit": "sentences"}, "words"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FixedSizeChunker(**kwargs)  # type: ignore[arg-type]
