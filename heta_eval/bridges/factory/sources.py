"""What a framework is given and what comes back: the benchmark's documents as texts with
provenance metadata, and the framework's retrieved items as heta_eval's `QueryResult`s.

Each parsed segment of a source (a page, a section, a table row; the whole text of a plain
document) becomes one `SourceText`, handed to the framework as one of its own documents
whose metadata carries our `document_id`, the raw `source_key`, the segment's character
offset in the parsed text (`segment_start_char`) and the segment's locator (`page_index`,
`section`, `table_id`, `row_index`, ...). Frameworks copy a document's metadata onto the
chunks they split from it, so every retrieved chunk maps back to the document, page and
characters it came from, and evidence metrics work on the framework's results as on ours.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from heta_eval.kb.documents import ParsedSource, RawSource
from heta_eval.kb.parsers.base import Parser
from heta_eval.kb.store import ObjectStore
from heta_eval.records import QueryResult, SourceRef

DOCUMENT_ID = "document_id"
SOURCE_KEY = "source_key"
SEGMENT_START = "segment_start_char"
# Locator fields that `SourceRef` has a field for; other locator keys go to its metadata.
_REF_FIELDS = ("page_index", "table_id", "row_index", "column")
_SCALARS = (str, int, float, bool)
# Locator keys heta_eval's parsers write besides those: kept in a result's source metadata.
_LOCATOR_KEYS = frozenset({"section", "heading_level", "block"})


@dataclass(frozen=True)
class SourceText:
    """One segment of a parsed source, given to the framework as one of its documents."""

    key: str
    """`{source_key}#{segment}`: a stable id for the framework's document."""
    text: str
    metadata: dict[str, Any]
    """`document_id`, `source_key`, `segment_start_char`, the segment's locator, and the
    source's own scalar metadata (e.g. a title) where its names are free."""


@dataclass
class ParsedSources:
    """The texts of a build, the documents that could not be parsed and the time it took."""

    texts: list[SourceText] = field(default_factory=list)
    documents: int = 0
    errors: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def _flat(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar entries (frameworks keep flat metadata: LlamaIndex refuses nested values)."""
    return {str(k): v for k, v in metadata.items() if v is None or isinstance(v, _SCALARS)}


def segment_texts(parsed: ParsedSource) -> list[SourceText]:
    """The non-blank segments of a parsed source, each with its provenance metadata."""
    texts = []
    for index, segment in enumerate(parsed.segments):
        text = parsed.text[segment.start_char : segment.end_char]
        if not text.strip():
            continue
        provenance = {
            DOCUMENT_ID: parsed.document_id,
            SOURCE_KEY: parsed.source_key,
            SEGMENT_START: segment.start_char,
            **_flat(segment.locator),
        }
        extra = {k: v for k, v in _flat(parsed.metadata).items() if k not in provenance}
        texts.append(SourceText(f"{parsed.source_key}#{index}", text, {**extra, **provenance}))
    return texts


def parse_sources(
    parser: Parser, store: ObjectStore, sources: Iterable[RawSource]
) -> ParsedSources:
    """Parse every source from `store`; a source that fails is a document error, not a
    failed build (as in heta_eval's own knowledge base)."""
    started = time.perf_counter()
    parsed = ParsedSources()
    for source in sources:
        try:
            texts = segment_texts(parser.parse(source, store.get(source.key)))
        except Exception as exc:  # one bad document must not stop the build
            parsed.errors[source.document_id] = f"{type(exc).__name__}: {exc}"
            continue
        parsed.documents += bool(texts)
        parsed.texts.extend(texts)
    parsed.seconds = time.perf_counter() - started
    return parsed


class LostProvenanceError(ValueError):
    """The framework returned an item whose metadata no longer names our document."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class RetrievedItem:
    """One item a framework retrieved, as the bridge read it from the framework's type."""

    text: str
    metadata: Mapping[str, Any]
    score: float | None = None
    item_id: str | None = None
    offset: int | None = None
    """Where the item starts in the framework document it was split from (characters)."""


def query_result(item: RetrievedItem, rank: int) -> QueryResult:
    """`item` as a `QueryResult` whose source names our document, page and characters.

    Without a score (LangChain's BM25Retriever gives none) the rank gives one: 1/(rank+1).
    """
    meta = item.metadata
    document_id, source_key = meta.get(DOCUMENT_ID), meta.get(SOURCE_KEY)
    if not document_id or not source_key:
        raise LostProvenanceError(
            f"a retrieved item has no {DOCUMENT_ID!r}/{SOURCE_KEY!r} in its metadata (it has "
            f"{sorted(meta)[:8]}): the factory must keep the metadata of the documents it is "
            "given on the chunks it makes"
        )
    segment_start, offset = _int(meta.get(SEGMENT_START)), _int(item.offset)
    start = segment_start + offset if segment_start is not None and offset is not None else None
    end = start + len(item.text) if start is not None else None
    fallback = f"{document_id}@{start}" if start is not None else f"{document_id}#{rank}"
    locator = {k: v for k, v in _flat(meta).items() if k in _LOCATOR_KEYS}
    score = item.score if item.score is not None else 1.0 / (rank + 1)
    return QueryResult(
        id=item.item_id or fallback,
        text=item.text,
        score=float(score),
        source=SourceRef(
            source_key=str(source_key),
            document_id=str(document_id),
            chunk_id=item.item_id,
            start_char=start,
            end_char=end,
            page_index=_int(meta.get("page_index")),
            table_id=str(meta["table_id"]) if meta.get("table_id") is not None else None,
            row_index=_int(meta.get("row_index")),
            column=str(meta["column"]) if meta.get("column") is not None else None,
            metadata={**locator, "score": "rank" if item.score is None else "framework"},
        ),
    )


def provenance_keys(texts: Sequence[SourceText]) -> list[str]:
    """Every metadata key the texts carry (to keep them out of what an LLM or an embedding
    model reads, where a framework lets us say so)."""
    return sorted({k for t in texts for k in t.metadata})
