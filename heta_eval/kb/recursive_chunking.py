"""Recursive character chunking: split on the coarsest separator present, merge up to a size.

The splitter LangChain's `RecursiveCharacterTextSplitter` popularised (and UDA's retrieval
baseline uses: 3,000 characters, 300 overlap, separators paragraph, line, space, character),
written from its definition: split the text on the first separator it contains, keeping the
separator at the start of the piece that follows; pieces shorter than `chunk_size` are
merged greedily into chunks of at most `chunk_size` characters, the next chunk starting
with the last pieces of the previous one that fit in `chunk_overlap`; a piece that is too
long is split again with the next separators. Chunks are stripped of outer whitespace and
are exact spans of the parsed text.
"""

from __future__ import annotations

from collections.abc import Sequence

from heta_eval.kb.chunking import (
    CHUNK_SIZE_RANGE,
    OVERLAP_RANGE,
    ChunkOverlap,
    ChunkSize,
    _make_chunks,
)
from heta_eval.kb.documents import Chunk, ParsedSource, Segment

Span = tuple[int, int]


class RecursiveCharacterChunker:
    """Chunks of at most `chunk_size` characters split at paragraphs, lines, then spaces.

    With `across_segments=True` the whole parsed text is split as one (UDA's baseline joins a
    PDF's pages before chunking), and a chunk's locator is that of the segment it starts in;
    otherwise chunks never cross segments, as with the other chunkers.
    """

    def __init__(
        self,
        chunk_size: ChunkSize = 3000,
        chunk_overlap: ChunkOverlap = 300,
        separators: Sequence[str] = ("\n\n", "\n", " ", ""),
        across_segments: bool = False,
    ) -> None:
        CHUNK_SIZE_RANGE.check("chunk_size", chunk_size)
        OVERLAP_RANGE.check("chunk_overlap", chunk_overlap)
        if chunk_overlap >= chunk_size:
            raise ValueError(
                f"chunk_overlap must be >= 0 and smaller than chunk_size ({chunk_size}), "
                f"got {chunk_overlap}"
            )
        if not separators:
            raise ValueError("separators must not be empty")
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.separators = tuple(separators)
        self.across_segments = across_segments

    def spans(self, text: str, start: int, end: int) -> list[Span]:
        """(start, end) offsets of the chunks of `text[start:end]`, stripped, in order."""
        stripped = []
        for first, last in self._split(text, start, end, self.separators):
            piece = text[first:last]
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                stripped.append((first + lead, first + len(piece.rstrip())))
        return stripped

    def _pieces(self, text: str, start: int, end: int, separator: str) -> list[Span]:
        if not separator:
            return [(i, i + 1) for i in range(start, end)]
        pieces, begin = [], start
        found = text.find(separator, start + 1, end) if end > start else -1
        while found != -1:
            pieces.append((begin, found))
            begin = found
            found = text.find(separator, found + len(separator), end)
        pieces.append((begin, end))
        return [(a, b) for a, b in pieces if b > a]

    def _split(self, text: str, start: int, end: int, separators: Sequence[str]) -> list[Span]:
        chosen, rest = separators[-1], ()
        for i, separator in enumerate(separators):
            if not separator or text.find(separator, start, end) != -1:
                chosen, rest = separator, tuple(separators[i + 1 :])
                break
        chunks: list[Span] = []
        small: list[Span] = []
        for first, last in self._pieces(text, start, end, chosen):
            if last - first < self.chunk_size:
                small.append((first, last))
                continue
            if small:
                chunks.extend(self._merge(small))
                small = []
            chunks.extend(self._split(text, first, last, rest) if rest else [(first, last)])
        if small:
            chunks.extend(self._merge(small))
        return chunks

    def _merge(self, pieces: list[Span]) -> list[Span]:
        """Greedy merge of adjacent pieces into spans of at most chunk_size, with overlap."""
        merged: list[Span] = []
        current: list[Span] = []
        total = 0
        for first, last in pieces:
            length = last - first
            if current and total + length > self.chunk_size:
                merged.append((current[0][0], current[-1][1]))
                while current and (total > self.chunk_overlap or total + length > self.chunk_size):
                    total -= current[0][1] - current[0][0]
                    current.pop(0)
            current.append((first, last))
            total += length
        if current:
            merged.append((current[0][0], current[-1][1]))
        return merged

    def chunk(self, parsed: ParsedSource) -> list[Chunk]:
        if not self.across_segments or len(parsed.segments) < 2:
            return _make_chunks(parsed, self.spans)
        segments = parsed.segments
        whole = (segments[0].start_char, segments[-1].end_char)
        joined = parsed.model_copy(
            update={"segments": (Segment(start_char=whole[0], end_char=whole[1]),)}
        )
        chunks = _make_chunks(joined, self.spans)
        return [
            c.model_copy(update={"locator": _locator_at(segments, c.start_char)}) for c in chunks
        ]


def _locator_at(segments: Sequence[Segment], offset: int) -> dict:
    """The locator of the segment holding `offset` (the last one starting at or before it)."""
    found = segments[0]
    for segment in segments:
        if segment.start_char > offset:
            break
        found = segment
    return dict(found.locator)
