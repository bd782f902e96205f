"""The embedded knowledge-base engine: object store, parsers, chunkers, indexes, recipes."""

from heta_eval.kb.answering import ExtractiveAnswerer, LLMAnswerer
from heta_eval.kb.bm25 import BM25Index
from heta_eval.kb.build_cache import BuildCache
from heta_eval.kb.chunking import FixedSizeChunker, SentenceChunker, StructureChunker
from heta_eval.kb.documents import Chunk, ParsedSource, RawSource, Segment
from heta_eval.kb.fusion import ReciprocalRankFusion, WeightedScoreFusion
from heta_eval.kb.knowledge_base import KnowledgeBase, UnknownQueryModeError
from heta_eval.kb.markup import HtmlParser, MarkdownParser
from heta_eval.kb.parsing import (
    SEGMENTS_MEDIA_TYPE,
    MediaTypeParser,
    ParseError,
    PdfParser,
    PlainTextParser,
    SegmentsJsonParser,
)
from heta_eval.kb.recipe import KnowledgeRecipe
from heta_eval.kb.store import InvalidKeyError, LocalObjectStore, ObjectStore
from heta_eval.kb.tables import DelimitedTableParser, JsonRecordsParser

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
