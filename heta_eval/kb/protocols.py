"""What the runner needs from a recipe and the knowledge bases it builds.

heta_eval's own `KnowledgeRecipe`/`KnowledgeBase` implement these; so can a bridge to
another engine (e.g. the Heta Framework), whose recipes then run unchanged in the runner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from heta_eval.kb.documents import RawSource
from heta_eval.kb.store import ObjectStore
from heta_eval.records import KnowledgeBaseManifest, QueryResponse


@runtime_checkable
class KnowledgeBaseLike(Protocol):
    """A built knowledge base the runner can query."""

    def manifest(self) -> KnowledgeBaseManifest: ...

    async def query(
        self, text: str, *, mode: str, top_k: int = 10, options: Mapping[str, Any] | None = None
    ) -> QueryResponse: ...


@runtime_checkable
class RecipeLike(Protocol):
    """A build plan: its name, the query modes it offers, a JSON manifest, and a builder.

    `create_knowledge_base` builds from raw objects the runner wrote to `store` under the
    sources' keys (`raw/benchmarks/...`).
    """

    @property
    def name(self) -> str: ...

    @property
    def query_modes(self) -> tuple[str, ...]: ...

    def manifest(self) -> dict[str, Any]: ...

    async def create_knowledge_base(
        self, *, name: str, store: ObjectStore, sources: Sequence[RawSource]
    ) -> KnowledgeBaseLike: ...
