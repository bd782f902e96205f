"""The embedded knowledge-base engine: object store, parsers, chunkers, indexes, recipes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from heta_eval.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from heta_eval.kb.answering import ExtractiveAnswerer, LLMAnswerer
    from heta_eval.kb.build_cache import BuildCache
    from heta_eval.kb.chunking import FixedSizeChunker, SentenceChunker, StructureChunker
    from heta_eval.kb.documents import Chunk, ParsedSource, RawSource, Segment
    from heta_eval.kb.index.bm25 import BM25Index
    from heta_eval.kb.index.fusion import ReciprocalRankFusion, WeightedScoreFusion
    from heta_eval.kb.knowledge_base import KnowledgeBase, UnknownQueryModeError
    from heta_eval.kb.parsers import (
        SEGMENTS_MEDIA_TYPE,
        DelimitedTableParser,
        HtmlParser,
        JsonRecordsParser,
        MarkdownParser,
        MediaTypeParser,
        ParseError,
        PdfParser,
        PlainTextParser,
        SegmentsJsonParser,
    )
    from heta_eval.kb.recipe import KnowledgeRecipe
    from heta_eval.kb.store import InvalidKeyError, LocalObjectStore, ObjectStore

# Names are imported on first use (PEP 562): the object store's writer process imports
# `heta_eval.kb.store` alone, without pydantic, the records and the engine.
_MODULES = {
    "heta_eval.kb.answering": ("ExtractiveAnswerer", "LLMAnswerer"),
    "heta_eval.kb.index.bm25": ("BM25Index",),
    "heta_eval.kb.build_cache": ("BuildCache",),
    "heta_eval.kb.chunking": ("FixedSizeChunker", "SentenceChunker", "StructureChunker"),
    "heta_eval.kb.documents": ("Chunk", "ParsedSource", "RawSource", "Segment"),
    "heta_eval.kb.index.fusion": ("ReciprocalRankFusion", "WeightedScoreFusion"),
    "heta_eval.kb.knowledge_base": ("KnowledgeBase", "UnknownQueryModeError"),
    "heta_eval.kb.parsers": (
        "SEGMENTS_MEDIA_TYPE",
        "DelimitedTableParser",
        "HtmlParser",
        "JsonRecordsParser",
        "MarkdownParser",
        "MediaTypeParser",
        "ParseError",
        "PdfParser",
        "PlainTextParser",
        "SegmentsJsonParser",
    ),
    "heta_eval.kb.recipe": ("KnowledgeRecipe",),
    "heta_eval.kb.store": ("InvalidKeyError", "LocalObjectStore", "ObjectStore"),
}
__getattr__, __dir__ = lazy_exports(__name__, _MODULES, globals())

__all__ = [
    "SEGMENTS_MEDIA_TYPE",
    "BM25Index",
    "BuildCache",
    "Chunk",
    "DelimitedTableParser",
    "ExtractiveAnswerer",
    "FixedSizeChunker",
    "HtmlParser",
    "InvalidKeyError",
    "JsonRecordsParser",
    "KnowledgeBase",
    "KnowledgeRecipe",
    "LLMAnswerer",
    "LocalObjectStore",
    "MarkdownParser",
    "MediaTypeParser",
    "ObjectStore",
    "ParseError",
    "ParsedSource",
    "PdfParser",
    "PlainTextParser",
    "RawSource",
    "ReciprocalRankFusion",
    "Segment",
    "SegmentsJsonParser",
    "SentenceChunker",
    "StructureChunker",
    "UnknownQueryModeError",
    "WeightedScoreFusion",
]
