"""Chunkers split parsed sources into chunks that keep their character offsets."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import Annotated, Literal, Protocol

from pydantic import AfterValidator

from heta_eval.config.ranges import MAX_CHUNK_SIZE, Range
from heta_eval.kb.documents import Chunk, ParsedSource

_WORD = re.compile(r"\S+")
_NON_SPACE = re.compile(r"\S")
_TOKEN = re.compile(r"\w+|[^\w\s]")
"""The `tokens` unit: runs of word characters and single punctuation marks (no tiktoken)."""

CHUNK_SIZE_RANGE = Range(1, MAX_CHUNK_SIZE)
OVERLAP_RANGE = Range(0, MAX_CHUNK_SIZE - 1)  # and smaller than the chunk size
OVERLAP_SENTENCES_RANGE = Range(0, 10_000)
ChunkSize = Annotated[int, AfterValidator(CHUNK_SIZE_RANGE)]
ChunkOverlap = Annotated[int, AfterValidator(OVERLAP_RANGE)]


class Chunker(Protocol):
    """Splits one parsed source into chunks."""

    def chunk(self, parsed: ParsedSource) -> list[Chunk]: ...


def _windows(count: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """(first, last) unit positions of windows of `size` units sharing `overlap` units."""
    step = size - overlap
    windows = []
    for first in range(0, count, step):
        last = min(first + size, count) - 1
        windows.append((first, last))
        if last == count - 1:
            break
    return windows


def _unit_windows(
    pattern: re.Pattern[str], text: str, start: int, end: int, size: int | None, overlap: int
) -> list[tuple[int, int]]:
    """(start, end) offsets of windows of `size` units (`pattern` matches) sharing `overlap`.

    The same windows as `_windows` over the list of units, found in one pass that holds at
    most `size` unit offsets, so a 50 MB document does not become millions of tuples.
    `size=None` gives one span from the first unit to the last.
    """
    if size is None:
        first = last = None
        for match in pattern.finditer(text, start, end):
            if first is None:
                first = match.start()
            last = match.end()
        return [] if first is None or last is None else [(first, last)]
    step = size - overlap
    window: deque[tuple[int, int]] = deque()
    spans: list[tuple[int, int]] = []
    ended_at_last_unit = False
    for match in pattern.finditer(text, start, end):
        window.append((match.start(), match.end()))
        ended_at_last_unit = False
        if len(window) == size:
            spans.append((window[0][0], window[-1][1]))
            ended_at_last_unit = True
            for _ in range(step):
                window.popleft()
    if window and not ended_at_last_unit:
        spans.append((window[0][0], window[-1][1]))
    return spans


def _make_chunks(
    parsed: ParsedSource, spans: Callable[[str, int, int], list[tuple[int, int]]]
) -> list[Chunk]:
    """Chunks `{document_id}#{index}` from the (start, end) spans of each segment in turn."""
    chunks: list[Chunk] = []
    for segment in parsed.segments:
        for start, end in spans(parsed.text, segment.start_char, segment.end_char):
            index = len(chunks)
            chunks.append(
                Chunk(
                    chunk_id=f"{parsed.document_id}#{index}",
                    chunk_index=index,
                    document_id=parsed.document_id,
                    source_key=parsed.source_key,
                    text=parsed.text[start:end],
                    start_char=start,
                    end_char=end,
                    locator=segment.locator,
                )
            )
    return chunks


class FixedSizeChunker:
    """Windows of `chunk_size` units with `chunk_overlap` units shared between them.

    Units: `words` (runs of non-space), `chars`, or `tokens` — the tokens of a simple regex
    tokenizer `\\w+|[^\\w\\s]` (word runs and single punctuation marks), an approximation of
    model tokens without a tokenizer dependency.

    `chunk_size=None` keeps each segment whole. Chunks never cross segment boundaries
    (pages, sections), and blank segments yield no chunk. Word and token chunks start at
    their first unit and end at their last, so offsets index the parsed text exactly.
    """

    def __init__(
        self,
        chunk_size: ChunkSize | None = None,
        chunk_overlap: ChunkOverlap = 0,
        unit: Literal["words", "tokens", "chars"] = "words",
    ) -> None:
        if chunk_size is not None:
            CHUNK_SIZE_RANGE.check("chunk_size", chunk_size)
        OVERLAP_RANGE.check("chunk_overlap", chunk_overlap)
        if chunk_size is not None and chunk_overlap >= chunk_size:
            raise ValueError(
                f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size})"
            )
        if unit not in ("words", "tokens", "chars"):
            raise ValueError(f"unit must be 'words', 'tokens' or 'chars', got {unit!r}")
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.unit = unit

    def _spans(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        if _NON_SPACE.search(text, start, end) is None:  # no copy of a huge segment
            return []
        if self.unit == "chars":
            if self.chunk_size is None:
                return [(start, end)]
            windows = _windows(end - start, self.chunk_size, self.chunk_overlap)
            return [(start + first, start + last + 1) for first, last in windows]
        if self.chunk_size is None:
            # Every non-space character belongs to a word or token: from the first to the last.
            segment = text[start:end]
            return [(end - len(segment.lstrip()), start + len(segment.rstrip()))]
        pattern = _TOKEN if self.unit == "tokens" else _WORD
        return _unit_windows(pattern, text, start, end, self.chunk_size, self.chunk_overlap)

    def chunk(self, parsed: ParsedSource) -> list[Chunk]:
        return _make_chunks(parsed, self._spans)


_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n[ \t]*\n\s*")
_ABBREVIATIONS = frozenset(
    {
        "mr.", "mrs.", "ms.", "dr.", "prof.", "sr.", "jr.", "st.", "mt.", "vs.", "inc.",
        "ltd.", "co.", "corp.", "fig.", "figs.", "eq.", "ed.", "eds.", "vol.", "pp.",
        "approx.", "dept.", "est.", "al.", "jan.", "feb.", "mar.", "apr.", "jun.", "jul.",
        "aug.", "sep.", "sept.", "oct.", "nov.", "dec.",
    }
)  # fmt: skip
_DOTTED = re.compile(r"(?:[a-z]\.){2,}|[a-z]\.")  # e.g. i.e. u.s. a.m. and initials ("J.")


def _is_abbreviation(text: str, stop: int) -> bool:
    """Whether the word ending with the full stop at `stop` is an abbreviation."""
    begin = stop
    while begin > 0 and not text[begin - 1].isspace():
        begin -= 1
    word = text[begin : stop + 1].lstrip("\"'([").lower()
    return word in _ABBREVIATIONS or _DOTTED.fullmatch(word) is not None


def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of `text[start:end]`, without outer whitespace.

    A sentence ends at `.`, `!` or `?` (and any closing quotes or brackets) followed by
    whitespace and an upper-case letter or digit, unless the word is a known abbreviation
    ("e.g.", "Dr.", "U.S.", an initial); a blank line always ends one.
    """
    spans = []
    begin = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if text[match.start()] == "." and _is_abbreviation(text, match.start()):
            continue
        spans.append((begin, match.start() + len(match.group().rstrip())))
        begin = match.end()
    spans.append((begin, end))
    trimmed = []
    for first, last in spans:
        piece = text[first:last]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            trimmed.append((first + lead, first + len(piece.rstrip())))
    return trimmed


class SentenceChunker:
    """Packs whole sentences into chunks of at most `max_words` words.

    Sentences are found by `sentence_spans`. A sentence longer than `max_words` becomes its
    own chunk(s), split into `max_words`-word windows. With `overlap_sentences=k`, each chunk
    after the first repeats up to the last `k` sentences of the chunk before it (fewer when
    they would not leave room for a new sentence). Chunks never cross segments and keep
    exact offsets into the parsed text.
    """

    def __init__(
        self,
        max_words: ChunkSize = 200,
        overlap_sentences: Annotated[int, AfterValidator(OVERLAP_SENTENCES_RANGE)] = 0,
    ) -> None:
        CHUNK_SIZE_RANGE.check("max_words", max_words)
        OVERLAP_SENTENCES_RANGE.check("overlap_sentences", overlap_sentences)
        self.max_words = max_words
        self.overlap_sentences = overlap_sentences

    def _spans(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        current: list[tuple[int, int, int]] = []  # (start, end, words) of packed sentences

        def flush() -> None:
            if current:
                spans.append((current[0][0], current[-1][1]))

        for first, last in sentence_spans(text, start, end):
            words = [(m.start(), m.end()) for m in _WORD.finditer(text, first, last)]
            if len(words) > self.max_words:
                flush()
                current = []
                for a, b in _windows(len(words), self.max_words, 0):
                    spans.append((words[a][0], words[b][1]))
                continue
            if current and sum(n for _, _, n in current) + len(words) > self.max_words:
                flush()
                # Repeat at most k sentences, never the whole previous chunk.
                keep = min(self.overlap_sentences, len(current) - 1)
                kept = current[len(current) - keep :] if keep else []
                while kept and sum(n for _, _, n in kept) + len(words) > self.max_words:
                    kept = kept[1:]
                current = kept
            current.append((first, last, len(words)))
        flush()
        return spans

    def chunk(self, parsed: ParsedSource) -> list[Chunk]:
        return _make_chunks(parsed, self._spans)


class StructureChunker:
    """One chunk per segment — a section, a table row, a page — as the parser made them.

    With `max_words`, segments longer than that are split into word windows of `max_words`
    (sharing `overlap_words`), exactly as `FixedSizeChunker(chunk_size=max_words)` does;
    shorter segments stay whole. Blank segments yield no chunk.
    """

    def __init__(self, max_words: ChunkSize | None = None, overlap_words: ChunkOverlap = 0) -> None:
        self._fixed = FixedSizeChunker(
            chunk_size=max_words, chunk_overlap=overlap_words, unit="words"
        )
        self.max_words = max_words
        self.overlap_words = overlap_words

    def chunk(self, parsed: ParsedSource) -> list[Chunk]:
        return self._fixed.chunk(parsed)
