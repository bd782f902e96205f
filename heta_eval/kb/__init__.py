"""The embedded knowledge-base engine: object store, parsers, chunkers, indexes, recipes."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
_LAZY = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'heta_eval.kb' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # What `_target_` suggestions ("did you mean ...") list for a misspelt name.
    return sorted(set(globals()) | set(_LAZY))


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
