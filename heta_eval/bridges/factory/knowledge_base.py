"""FactoryKnowledgeBase: what a user's factory built with a framework, behind heta_eval's
knowledge-base protocol.

A framework bridge says how to ask its framework (`ask`: a retriever's results, or a query
engine's or chain's answer with the sources it used); this class turns what comes back into
a `QueryResponse` whose results carry our provenance, and describes the build in the
knowledge base's manifest.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from heta_eval.bridges.factory.sources import RetrievedItem, query_result
from heta_eval.protocols import BaseKnowledgeBase
from heta_eval.records import (
    BuildStep,
    KnowledgeBaseManifest,
    QueryResponse,
)


@dataclass(frozen=True)
class Found:
    """What the framework gave for one query: ranked items, an answer (a query engine's or
    a chain's) and what to keep of it in the response's trace."""

    items: Sequence[RetrievedItem]
    answer: str | None = None
    trace: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BuildFacts:
    """What a build did, for the manifest: the sources, its steps, counts and errors."""

    name: str
    recipe_name: str
    query_modes: tuple[str, ...]
    source_keys: tuple[str, ...]
    steps: tuple[BuildStep, ...]
    counts: Mapping[str, int]
    build_seconds: float
    document_errors: Mapping[str, str]


class FactoryKnowledgeBase(BaseKnowledgeBase):
    """A knowledge base a user's factory built with a framework (`product`: a retriever, a
    query engine, a chain or a pipeline); a subclass asks the framework (`ask`)."""

    engine: str = ""

    def __init__(
        self, product: Any, *, kind: str, facts: BuildFacts, versions: Mapping[str, str]
    ) -> None:
        self.product = product
        self.kind = kind
        self.facts = facts
        self.versions = dict(versions)

    @property
    def query_modes(self) -> tuple[str, ...]:
        return self.facts.query_modes

    def manifest(self) -> KnowledgeBaseManifest:
        facts = self.facts
        return KnowledgeBaseManifest(
            name=facts.name,
            recipe_name=facts.recipe_name,
            query_modes=facts.query_modes,
            source_keys=facts.source_keys,
            steps=facts.steps,
            counts=dict(facts.counts),
            build_seconds=facts.build_seconds,
            document_errors=dict(facts.document_errors),
        )

    @abstractmethod
    async def ask(self, text: str, top_k: int) -> Found:
        """The framework's own call for one query (asynchronous where it has one)."""

    async def query(
        self, text: str, *, mode: str, top_k: int = 10, options: Mapping[str, Any] | None = None
    ) -> QueryResponse:
        """The framework's results (at most `top_k`) and answer, with our provenance."""
        if mode not in self.query_modes:
            raise ValueError(
                f"query mode {mode!r} is not offered by recipe {self.facts.recipe_name!r}; "
                f"allowed: {list(self.query_modes)}"
            )
        if not text.strip():
            return QueryResponse(query=text, mode=mode)
        found = await self.ask(text, top_k)
        results = tuple(query_result(item, rank) for rank, item in enumerate(found.items))
        trace = {
            "engine": self.engine,
            "engine_versions": self.versions,
            "kind": self.kind,
            "retrieved": len(results),
            **found.trace,
        }
        return QueryResponse(
            query=text, mode=mode, results=results[:top_k], answer=found.answer, trace=trace
        )
