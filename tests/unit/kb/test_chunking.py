"""Chunks keep exact character offsets, respect overlap and never cross segments: fixed-size
windows (words, characters, tokens), whole sentences, and the parsed structure's segments."""

from __future__ import annotations

import pytest

from heta_eval.kb import FixedSizeChunker, MediaTypeParser, ParsedSource, RawSource, Segment
from heta_eval.kb.chunking import SentenceChunker, StructureChunker, sentence_spans

TEXT = "one two three four five six seven eight nine ten"


def _parsed(text: str = TEXT, segments: tuple[Segment, ...] | None = None) -> ParsedSource:
    return ParsedSource(
        source_key="raw/k/d.txt",
        document_id="d",
        media_type="text/plain",
        text=text,
        segments=segments or (Segment(start_char=0, end_char=len(text)),),
    )


def _parse(media_type: str, text: str) -> ParsedSource:
    """`text` parsed as `media_type`; every chunk of the structure and sentence chunkers
    indexes the parsed text."""
    source = RawSource(key="raw/b/test/d/d.bin", document_id="d", media_type=media_type)
    parsed = MediaTypeParser().parse(source, text.encode())
    for chunk in StructureChunker().chunk(parsed) + SentenceChunker(max_words=5).chunk(parsed):
        assert parsed.text[chunk.start_char : chunk.end_char] == chunk.text
    return parsed


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
        ({"chunk_size": 0}, r"within \[1, 10000000\]"),
        ({"chunk_size": 4, "chunk_overlap": 4}, "smaller than chunk_size"),
        ({"chunk_overlap": -1}, r"within \[0, 9999999\]"),
        ({"unit": "sentences"}, "words"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FixedSizeChunker(**kwargs)  # type: ignore[arg-type]


def test_sentence_spans_respect_abbreviations_and_blank_lines() -> None:
    text = (
        ' Dr. Smith moved to the U.S. in 1999. He studied kelp, e.g. giant kelp! "Why?" '
        "Nobody knew. J. R. Tolkien wrote at 9 a.m. Every day.\n\nno capital after a blank line"
    )
    assert [text[a:b] for a, b in sentence_spans(text, 0, len(text))] == [
        "Dr. Smith moved to the U.S. in 1999.",
        "He studied kelp, e.g. giant kelp!",
        '"Why?"',
        "Nobody knew.",
        "J. R. Tolkien wrote at 9 a.m. Every day.",
        "no capital after a blank line",
    ]
    assert sentence_spans("version 2.5 is out. 3 bugs fixed", 0, 32) == [(0, 19), (20, 32)]


def test_sentence_chunker_packs_whole_sentences() -> None:
    text = "One two three. Four five. Six seven eight nine. Ten."
    chunks = SentenceChunker(max_words=5).chunk(_parsed(text))
    assert [c.text for c in chunks] == [
        "One two three. Four five.",
        "Six seven eight nine. Ten.",
    ]
    assert [c.chunk_id for c in chunks] == ["d#0", "d#1"]
    for chunk in chunks:
        assert text[chunk.start_char : chunk.end_char] == chunk.text


def test_sentence_chunker_overlap_and_long_sentences() -> None:
    text = "Ab cd. Ef gh. Ij kl. " + " ".join(f"W{i}" for i in range(7)) + ". Mn op."
    chunks = SentenceChunker(max_words=4, overlap_sentences=1).chunk(_parsed(text))
    assert [c.text for c in chunks] == [
        "Ab cd. Ef gh.",
        "Ef gh. Ij kl.",
        "W0 W1 W2 W3",
        "W4 W5 W6.",
        "Mn op.",
    ]
    for chunk in chunks:
        assert text[chunk.start_char : chunk.end_char] == chunk.text


def test_sentence_chunker_stays_inside_segments() -> None:
    parsed = _parse("text/markdown", "# A\nFirst. Second.\n# B\nThird.")
    chunks = SentenceChunker(max_words=50).chunk(parsed)
    assert [(c.text, c.locator["section"]) for c in chunks] == [
        ("# A\nFirst. Second.", "A"),
        ("# B\nThird.", "B"),
    ]
    with pytest.raises(ValueError, match="max_words"):
        SentenceChunker(max_words=0)
    with pytest.raises(ValueError, match="overlap_sentences"):
        SentenceChunker(overlap_sentences=-1)


def test_structure_chunker_keeps_segments_and_splits_long_ones() -> None:
    parsed = _parse("text/csv", "k,v\na,1\nb,2 3 4 5 6\n")
    whole = StructureChunker().chunk(parsed)
    assert [(c.text, c.locator["row_index"]) for c in whole] == [
        ("k = a; v = 1", 0),
        ("k = b; v = 2 3 4 5 6", 1),
    ]
    split = StructureChunker(max_words=4).chunk(parsed)
    assert [(c.text, c.locator["row_index"]) for c in split] == [
        ("k = a; v", 0),
        ("= 1", 0),
        ("k = b; v", 1),
        ("= 2 3 4", 1),
        ("5 6", 1),
    ]
    for chunk in split:
        assert parsed.text[chunk.start_char : chunk.end_char] == chunk.text


def test_fixed_size_token_windows() -> None:
    text = "Hello, world! It's 2024."
    chunks = FixedSizeChunker(chunk_size=4, chunk_overlap=1, unit="tokens").chunk(_parsed(text))
    # tokens: Hello , world ! It ' s 2024 .
    assert [c.text for c in chunks] == ["Hello, world!", "! It's", "s 2024."]
    for chunk in chunks:
        assert text[chunk.start_char : chunk.end_char] == chunk.text
    with pytest.raises(ValueError, match="'words', 'tokens' or 'chars'"):
        FixedSizeChunker(unit="sentences")  # type: ignore[arg-type]
