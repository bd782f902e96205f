"""Example factories for `recipe=haystack` that run offline.

`bm25_pipeline`: a `DocumentSplitter` splits the documents, an `InMemoryDocumentStore` holds
the chunks and a pipeline of one `InMemoryBM25Retriever` (named `retriever`) ranks them.
`bm25_answer_pipeline`: the same retriever feeding a `ChatPromptBuilder` and Haystack's
`MockChatGenerator` (named `llm`), which echoes the prompt it is given: the answer path runs
without a model or a network.

Haystack is imported when a factory is called (listing the recipes imports this module);
framework types are `Any` in the signatures, so that the arguments' own types can be checked
at assembly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

SplitBy = Literal["word", "passage", "page", "line"]
Algorithm = Literal["BM25Okapi", "BM25L", "BM25Plus"]
PROMPT = (
    "Answer the question from the context.\n\nContext:\n"
    "{% for document in documents %}{{ document.content }}\n{% endfor %}\n"
    "Question: {{ query }}"
)


def store(
    documents: Sequence[Any],
    *,
    split_by: SplitBy,
    split_length: int | None,
    split_overlap: int,
    algorithm: Algorithm,
) -> Any:
    """An in-memory `InMemoryDocumentStore` of the documents' chunks (`split_length` units
    of `split_by`; None: documents whole), each with its document's meta and
    `split_idx_start`."""
    from haystack.components.preprocessors import DocumentSplitter
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    chunks = list(documents)
    if split_length is not None:
        splitter = DocumentSplitter(
            split_by=split_by, split_length=split_length, split_overlap=split_overlap
        )
        chunks = splitter.run(documents=chunks)["documents"]
    document_store = InMemoryDocumentStore(bm25_algorithm=algorithm)
    document_store.write_documents(chunks)
    return document_store


def bm25_pipeline(
    documents: Sequence[Any],
    *,
    split_by: SplitBy = "word",
    split_length: int | None = 200,
    split_overlap: int = 0,
    top_k: int = 100,
    algorithm: Algorithm = "BM25L",
) -> Any:
    """A pipeline of one `InMemoryBM25Retriever` (`retriever`, `top_k` results) over the
    chunks; Haystack's BM25 (`algorithm`, its default BM25L) and its tokenisation."""
    from haystack import Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

    document_store = store(
        documents,
        split_by=split_by,
        split_length=split_length,
        split_overlap=split_overlap,
        algorithm=algorithm,
    )
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(document_store, top_k=top_k))
    return pipeline


def bm25_answer_pipeline(
    documents: Sequence[Any],
    *,
    split_by: SplitBy = "word",
    split_length: int | None = 200,
    split_overlap: int = 0,
    top_k: int = 4,
    algorithm: Algorithm = "BM25L",
) -> Any:
    """`bm25_pipeline`'s retriever, a prompt of its `top_k` chunks and the query, and
    `MockChatGenerator` (`llm`), whose reply, the answer, is that prompt."""
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.generators.chat import MockChatGenerator
    from haystack.dataclasses import ChatMessage

    pipeline = bm25_pipeline(
        documents,
        split_by=split_by,
        split_length=split_length,
        split_overlap=split_overlap,
        top_k=top_k,
        algorithm=algorithm,
    )
    template = [ChatMessage.from_user(PROMPT)]
    builder = ChatPromptBuilder(template=template, required_variables=["documents", "query"])
    pipeline.add_component("prompt", builder)
    pipeline.add_component("llm", MockChatGenerator())
    pipeline.connect("retriever.documents", "prompt.documents")
    pipeline.connect("prompt.prompt", "llm.messages")
    return pipeline
