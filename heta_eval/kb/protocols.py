"""What the runner needs from a recipe and the knowledge bases it builds, and what a
KnowledgeBase needs from its build plan.

heta_eval's own `KnowledgeRecipe`/`KnowledgeBase` implement these; so can a bridge to
another engine (e.g. the Heta Framework), whose recipes then run unchanged in the runner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from heta_eval.kb.documents import RawSource
from heta_eval.kb.store import ObjectStore
from heta_eval.records import BenchmarkCase, KnowledgeBaseManifest, QueryResponse


@runtime_checkable
class KnowledgeBaseLike(Protocol):
    """A built knowledge base the runner can query."""

    def manifest(self) -> KnowledgeBaseManifest: ...

    async def query(
        self, text: str, *, mode: str, top_k: int = 10, options: Mapping[str, Any] | None = None
    ) -> QueryResponse: ...


@runtime_checkable
class CaseQueryable(Protocol):
    """A knowledge base that answers benchmark cases by id (a replay's answers are recorded
    per case); the runner calls `query_case` instead of `query` when a KB has it."""

    async def query_case(
        self, case: BenchmarkCase, *, unit_id: str, mode: str, top_k: int = 10
    ) -> QueryResponse: ...


@runtime_checkable
class RecipeLike(Protocol):
    """A build plan: its name, the query modes it offers, a JSON manifest, and a builder.

    `create_knowledge_base` builds from raw objects the runner wrote to `store` under the
    sources' keys (`raw/benchmarks/...`). Optional members the runner uses when present:
    `check_contents(contents)` checks the recipe against the loaded benchmark before any
    work (a ValueError stops the run), and `content_digests()` names the digests of the
    files the recipe reads, which become part of the run's identity.
    """

    @property
    def name(self) -> str: ...

    @property
    def query_modes(self) -> tuple[str, ...]: ...

    def manifest(self) -> dict[str, Any]: ...

    async def create_knowledge_base(
        self, *, name: str, store: ObjectStore, sources: Sequence[RawSource]
    ) -> KnowledgeBaseLike: ...


class BuildPlan(Protocol):
    """What a KnowledgeBase is built from and queried with; `KnowledgeRecipe` is one.

    `parser`, `chunker` and each of `indexes` are `_target_` specs (their `_target_` names
    the component in the build steps of the manifest); the `create_*` methods instantiate
    them. Declared here, below both, so that the knowledge base does not import the recipe
    that builds it.
    """

    @property
    def name(self) -> str: ...

    @property
    def query_modes(self) -> tuple[str, ...]: ...

    @property
    def parser(self) -> Mapping[str, Any]: ...

    @property
    def chunker(self) -> Mapping[str, Any]: ...

    @property
    def indexes(self) -> Mapping[str, Mapping[str, Any]]: ...

    def create_parser(self) -> Any: ...

    def create_chunker(self) -> Any: ...

    def create_index_builders(self) -> dict[str, Any]: ...

    def create_fusions(self) -> dict[str, Any]: ...

    def create_reranker(self) -> Any: ...

    def create_answerer(self) -> Any: ...
