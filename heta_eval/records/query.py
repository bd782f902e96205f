"""Records that a knowledge base returns: query results with provenance, and its manifest."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from heta_eval.records._base import JsonDict, NonEmptyStr, Record


class SourceRef(Record):
    """Provenance of a retrieved item: the raw key it came from and where inside it."""

    source_key: NonEmptyStr
    document_id: NonEmptyStr
    chunk_id: str | None = None
    chunk_index: int | None = None
    start_char: int | None = None
    end_char: int | None = None
    page_index: int | None = None
    table_id: str | None = None
    row_index: int | None = None
    column: str | None = None
    metadata: JsonDict = Field(default_factory=dict)


class QueryResult(Record):
    """One ranked item of a query response."""

    id: NonEmptyStr
    text: str
    score: float
    kind: str = "chunk"
    source: SourceRef


class KnowledgeBaseScope(Record):
    """What the knowledge base that answered a query holds, as far as it is known (None:
    not known). The runner attaches it to each response before scoring, from the knowledge
    base's manifest and its recipe, so that an evaluator can tell a metric that cannot
    fail (every retrievable item fits in the top k) from one that can."""

    items: int | None = Field(default=None, ge=0)
    """Retrievable items (chunks) the knowledge base holds."""
    documents: int | None = Field(default=None, ge=0)
    """Documents it holds (parsed, with text)."""
    answers: bool | None = None
    """Whether its recipe generates answers."""


class QueryResponse(Record):
    """What `KnowledgeBase.query` returns: ranked results, an optional answer, and a trace.

    `scope` is set by the runner, not by the knowledge base (see `KnowledgeBaseScope`)."""

    query: str
    mode: NonEmptyStr
    results: tuple[QueryResult, ...] = ()
    answer: str | None = None
    citations: tuple[str, ...] = ()
    trace: JsonDict = Field(default_factory=dict)
    scope: KnowledgeBaseScope | None = None


class BuildStep(Record):
    """One step of a knowledge-base build with what it produced and how long it took."""

    name: NonEmptyStr
    component: str
    seconds: float = Field(ge=0)
    counts: dict[str, int] = Field(default_factory=dict)


class KnowledgeBaseManifest(Record):
    """What was built: the recipe, the sources, the steps, counts and build time."""

    name: NonEmptyStr
    recipe_name: NonEmptyStr
    query_modes: tuple[str, ...]
    source_keys: tuple[str, ...]
    sources_listed: bool = Field(
        default=True,
        description="False in a report whose `source_keys` were left out because they are "
        "the keys of the unit's stored documents in the benchmark's order (the report's "
        "`run.document_key(id)` gives each): at a million documents the list was 70 MB of "
        "the report. The build cache keeps the list; the journal keeps what the report keeps.",
    )
    steps: tuple[BuildStep, ...]
    counts: dict[str, int] = Field(default_factory=dict)
    build_seconds: float = Field(ge=0)
    document_errors: dict[str, str] = Field(default_factory=dict)
    cache_status: Literal["off", "hit", "miss"] = "off"
    cache_key: str | None = None
    load_seconds: float | None = Field(default=None, ge=0)
