"""ParagraphChunker: a chunker of one's own, named by `_target_` in a recipe."""

from __future__ import annotations

import re

from heta_eval.kb import Chunk, ParsedSource

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


class ParagraphChunker:
    """One chunk per paragraph (text between blank lines) of each parsed segment.

    Chunks never cross segments, so a Markdown section's paragraphs keep that section's
    locator; `start_char`/`end_char` index the parsed text exactly, which is what provenance
    and evidence matching rely on. `min_words` merges a paragraph shorter than that into the
    next one of the same segment (headings alone, list stubs).
    """

    def __init__(self, min_words: int = 5) -> None:
        if min_words < 1:
            raise ValueError(f"min_words must be >= 1, got {min_words}")
        self.min_words = min_words

    def _spans(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        paragraphs: list[tuple[int, int]] = []  # (start, end) of each non-blank paragraph
        cursor = start
        for stop in [*(m.start() for m in _PARAGRAPH_BREAK.finditer(text, start, end)), end]:
            piece = text[cursor:stop]
            if piece.strip():
                first = cursor + len(piece) - len(piece.lstrip())
                paragraphs.append((first, first + len(piece.strip())))
            cursor = stop
        spans: list[tuple[int, int]] = []
        pending: int | None = None  # start of short paragraphs waiting for the next one
        for first, last in paragraphs:
            first = first if pending is None else pending
            if len(text[first:last].split()) < self.min_words:
                pending = first
                continue
            spans.append((first, last))
            pending = None
        if pending is not None:  # a short tail joins the paragraph before it
            last = paragraphs[-1][1]
            spans[-1:] = [(spans[-1][0] if spans else pending, last)]
        return spans

    def chunk(self, parsed: ParsedSource) -> list[Chunk]:
        """Chunks `{document_id}#{n}`, numbered across the whole source."""
        chunks: list[Chunk] = []
        for segment in parsed.segments:
            for start, end in self._spans(parsed.text, segment.start_char, segment.end_char):
                chunks.append(
                    Chunk(
                        chunk_id=f"{parsed.document_id}#{len(chunks)}",
                        chunk_index=len(chunks),
                        document_id=parsed.document_id,
                        source_key=parsed.source_key,
                        text=parsed.text[start:end],
                        start_char=start,
                        end_char=end,
                        locator=segment.locator,
                    )
                )
        return chunks
