"""LlamaIndexRecipe: a LlamaIndex retriever or query engine, built by a user's factory, as a
recipe.

The factory receives the benchmark's documents as `llama_index.core.Document`s (our
provenance in their metadata, kept out of what an LLM or an embedding model reads;
`{source_key}#{segment}` as their id) and returns a `BaseRetriever` (queried with
`aretrieve`) or a `BaseQueryEngine` (queried with `aquery`: its answer is scored, its
source nodes are the results).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heta_eval.bridges.factory import BuildFacts, FactoryRecipe, SourceText
from heta_eval.bridges.llamaindex.knowledge_base import LlamaIndexKnowledgeBase


class LlamaIndexRecipe(FactoryRecipe):
    """A recipe whose knowledge base is a LlamaIndex retriever or query engine from a user's
    factory (`factory`: a `_target_` spec of a callable `(documents, **arguments)`). A
    retriever's depth is its own (the example factories' `k`); results past
    `runner.top_k` are cut."""

    framework = "LlamaIndex"
    extra = "llamaindex"
    requires = ("llama-index-core",)
    records = ("llama-index-retrievers-bm25",)
    answering_kinds = frozenset({"query_engine"})

    def to_documents(self, texts: Sequence[SourceText]) -> list[Any]:
        from llama_index.core import Document

        return [
            Document(
                text=t.text,
                metadata=dict(t.metadata),
                id_=t.key,
                excluded_embed_metadata_keys=list(t.metadata),
                excluded_llm_metadata_keys=list(t.metadata),
            )
            for t in texts
        ]

    def kind_of(self, product: Any) -> str:
        from llama_index.core.base.base_query_engine import BaseQueryEngine
        from llama_index.core.base.base_retriever import BaseRetriever

        if isinstance(product, BaseRetriever):
            return "retriever"
        if isinstance(product, BaseQueryEngine):
            return "query_engine"
        raise TypeError(
            "the LlamaIndex bridge queries a llama_index.core BaseRetriever or BaseQueryEngine"
        )

    def knowledge_base(
        self, product: Any, *, kind: str, facts: BuildFacts
    ) -> LlamaIndexKnowledgeBase:
        return LlamaIndexKnowledgeBase(product, kind=kind, facts=facts, versions=self.versions)
