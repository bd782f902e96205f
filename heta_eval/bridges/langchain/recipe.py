"""LangChainRecipe: a LangChain retriever or chain, built by a user's factory, as a recipe.

The factory receives the benchmark's documents as `langchain_core.documents.Document`s (our
provenance in their metadata, `{source_key}#{segment}` as their id) and returns a
`BaseRetriever` (queried with `ainvoke(query)`) or a chain, any other `Runnable`, queried
with `ainvoke({query_input: query})` and answering as LangChain's `create_retrieval_chain`
does: a mapping with the retrieved documents under `context` and the answer under `answer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from heta_eval.bridges.factory import BuildFacts, FactoryRecipe, SourceText
from heta_eval.bridges.langchain.knowledge_base import LangChainKnowledgeBase


class LangChainRecipe(FactoryRecipe):
    """A recipe whose knowledge base is a LangChain retriever or chain from a user's factory.

    `factory`: a `_target_` spec of a callable `(documents, **arguments)` returning a
    `BaseRetriever` or a chain (`Runnable`); `query_input`: the chain's input key (the query
    text goes there; `input` as in `create_retrieval_chain`). A retriever's depth is its own
    (the example factories' `k`); results past `runner.top_k` are cut.
    """

    framework = "LangChain"
    extra = "langchain"
    requires = ("langchain-core",)
    records = ("langchain-community", "langchain-text-splitters", "rank-bm25")
    answering_kinds = frozenset({"chain"})

    def __init__(
        self,
        *,
        name: str,
        factory: Mapping[str, Any],
        parser: Mapping[str, Any] | None = None,
        query_mode: str | None = None,
        query_input: str = "input",
        description: str | None = None,
    ) -> None:
        self.query_input = str(query_input)
        super().__init__(
            name=name,
            factory=factory,
            parser=parser,
            query_mode=query_mode,
            description=description,
        )

    def settings(self) -> dict[str, Any]:
        return {"query_input": self.query_input}

    def to_documents(self, texts: Sequence[SourceText]) -> list[Any]:
        from langchain_core.documents import Document

        return [Document(page_content=t.text, metadata=dict(t.metadata), id=t.key) for t in texts]

    def kind_of(self, product: Any) -> str:
        from langchain_core.retrievers import BaseRetriever
        from langchain_core.runnables import Runnable

        if isinstance(product, BaseRetriever):
            return "retriever"
        if isinstance(product, Runnable):
            return "chain"
        raise TypeError(
            "the LangChain bridge queries a langchain_core.retrievers.BaseRetriever or a "
            "chain (a langchain_core.runnables.Runnable)"
        )

    def knowledge_base(
        self, product: Any, *, kind: str, facts: BuildFacts
    ) -> LangChainKnowledgeBase:
        return LangChainKnowledgeBase(
            product, kind=kind, facts=facts, versions=self.versions, query_input=self.query_input
        )
