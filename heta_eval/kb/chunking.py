"""Chunkers split parsed sources into chunks that keep their character offsets."""

from __future__ import annotations

import re
from typing import Literal, Protocol

from heta_eval.kb.documents import Chunk, ParsedSource

_WORD = re.compile(r"\S+")


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


class FixedSizeChunker:
    """Windows of `chunk_size` words (or characters) with `chunk_overlap` shared between them.

    `chunk_size=None` keeps each segment whole. Chunks never cross segment boundaries
    (pages, sections), and blank segments yield no chunk. Word chunks start at their first
    word and end at their last, so offsets index the parsed text exactly.
    """

    def __init__(
        self,
        chunk_size: int | None = None,
        chunk_overlap: int = 0,
        unit: Literal["words", "chars"] = "words",
    ) -> None:
        if chunk_size is not None and chunk_size <= 0:
            raise ValueError(f"chunk_size must be a positive integer or null, got {chunk_size}")
        if chunk_overlap < 0:
            raise ValueError(f"chunk_overlap must be >= 0, got {chunk_overlap}")
        if chunk_size is not None and chunk_overlap >= chunk_size:
            raise ValueError(
                f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size})"
            )
        if unit not in ("words", "chars"):
            raise ValueError(f"unit must be 'words' or 'chars', got {unit!r}")
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.unit = unit

    def _spans(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        if not text[start:end].strip():
            return []
        if self.unit == "chars":
            if self.chunk_size is None:
                return [(start, end)]
            windows = _windows(end - start, self.chunk_size, self.chunk_overlap)
            return [(start + first, start + last + 1) for first, last in windows]
        words = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
        if self.chunk_size is None:
            return [(words[0][0], words[-1][1])]
        windows = _windows(len(words), self.chunk_size, self.chunk_overlap)
        return [(words[first][0], words[last][1]) for first, last in windows]

    def chunk(self, parsed: ParsedSource) -> list[Chunk]:
        chunks: list[Chunk] = []
        for segment in parsed.segments:
            for start, end in self._spans(parsed.text, segment.start_char, segment.end_char):
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
