"""Factories the bridge tests name by `_target_`: wrong products, products that lose our
provenance, a chain with the wrong output."""

from __future__ import annotations

from typing import Any

import pytest

EXTRAS = "pip install 'heta-eval[langchain,llamaindex,haystack]'"


def require_frameworks(*modules: str) -> None:
    """Skip the calling test module unless every one of `modules` imports."""
    for module in modules:
        pytest.importorskip(module, reason=f"{module} is not installed ({EXTRAS})")


def returns_a_list(documents: list[Any]) -> list[Any]:
    """A factory that returns the documents it was given, not something to query."""
    return list(documents)


def haystack_without_retriever(documents: list[Any]) -> Any:
    """A Haystack pipeline with no component named `retriever`."""
    from haystack import Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents(documents)
    pipeline = Pipeline()
    pipeline.add_component("bm25", InMemoryBM25Retriever(store))
    return pipeline


def langchain_string_chain(documents: list[Any]) -> Any:
    """A LangChain chain that answers with a bare string (no `context`)."""
    from langchain_core.runnables import RunnableLambda

    return RunnableLambda(lambda inputs: f"an answer to {inputs['input']}")


def langchain_forgetful_retriever(documents: list[Any]) -> Any:
    """A LangChain retriever whose documents lost their metadata."""
    from langchain_core.documents import Document

    from heta_eval.bridges.langchain.examples import bm25_retriever

    bare = [Document(page_content=d.page_content) for d in documents]
    return bm25_retriever(bare, chunk_size=None, k=3)


def users_bm25(documents: list[Any], *, k: int = 3) -> Any:
    """A user's own factory: the LangChain example with a depth of its own."""
    from heta_eval.bridges.langchain.examples import bm25_retriever

    return bm25_retriever(documents, chunk_size=None, k=k)
