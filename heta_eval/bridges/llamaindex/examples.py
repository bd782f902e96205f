"""Example factories for `recipe=llamaindex` that run offline.

`keyword_retriever`: llama-index-core's `SimpleKeywordTableIndex` over the nodes of a
`SentenceSplitter` (chunks are counted in tokens, with the tiktoken encoding LlamaIndex
ships); its retriever ranks chunks by how many of the query's keywords they hold. Chunks
that hold as many keywords come in LlamaIndex's own order, that of Python sets of node ids,
which changes from one process to the next: with ties, repeated runs differ unless
PYTHONHASHSEED is set. `keyword_query_engine`: that retriever in a `RetrieverQueryEngine`
whose LLM is LlamaIndex's `MockLLM`, which answers with the prompt it was given.

`bm25_retriever`: LlamaIndex's `BM25Retriever` (llama-index-retrievers-bm25, on bm25s) over
the same chunks. That package pins PyStemmer<3, and PyStemmer 2 stems some words
differently from the PyStemmer 3 that heta_eval's own BM25 uses (75 of SciFact's 36,116
words), so it is not part of the `llamaindex` extra: install it yourself to use it.

LlamaIndex is imported when a factory is called (listing the recipes imports this module);
framework types are `Any` in the signatures, so that the arguments' own types can be checked
at assembly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heta_eval.bridges.factory import require

BM25_HINT = (
    "pip install llama-index-retrievers-bm25 (not part of heta-eval[llamaindex]: it pins "
    "PyStemmer<3, which stems differently from heta_eval's own BM25)"
)


def chunk_id(index: int, document: Any) -> str:
    """A node's id: its document's id and its position (LlamaIndex's default is random)."""
    return f"{document.node_id}/{index}"


def split(documents: Sequence[Any], chunk_size: int, chunk_overlap: int) -> list[Any]:
    """`SentenceSplitter` nodes of at most `chunk_size` tokens, each with its document's
    metadata, its offsets in the document and a repeatable id."""
    from llama_index.core.node_parser import SentenceSplitter

    splitter = SentenceSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, id_func=chunk_id
    )
    return splitter.get_nodes_from_documents(documents)


def keyword_retriever(
    documents: Sequence[Any],
    *,
    chunk_size: int = 1024,
    chunk_overlap: int = 20,
    k: int = 10,
    max_keywords_per_query: int = 10,
) -> Any:
    """A keyword table's retriever: at most `k` chunks holding the most of the query's
    (at most `max_keywords_per_query`) keywords."""
    from llama_index.core import SimpleKeywordTableIndex
    from llama_index.core.llms import MockLLM

    index = SimpleKeywordTableIndex(split(documents, chunk_size, chunk_overlap), llm=MockLLM())
    return index.as_retriever(num_chunks_per_query=k, max_keywords_per_query=max_keywords_per_query)


def keyword_query_engine(
    documents: Sequence[Any],
    *,
    chunk_size: int = 1024,
    chunk_overlap: int = 20,
    k: int = 4,
) -> Any:
    """`keyword_retriever`'s top `k` chunks answered by `MockLLM` (it repeats its prompt) in
    one call (`simple_summarize`: the chunks are cut to fit one prompt; LlamaIndex's default,
    `compact`, would refine an answer over several prompts, and an echoed prompt outgrows
    the next one)."""
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.response_synthesizers import ResponseMode

    retriever = keyword_retriever(
        documents, chunk_size=chunk_size, chunk_overlap=chunk_overlap, k=k
    )
    return RetrieverQueryEngine.from_args(
        retriever, llm=MockLLM(), response_mode=ResponseMode.SIMPLE_SUMMARIZE
    )


def bm25_retriever(
    documents: Sequence[Any],
    *,
    chunk_size: int = 1024,
    chunk_overlap: int = 20,
    k: int = 100,
    language: str = "english",
) -> Any:
    """LlamaIndex's `BM25Retriever` (bm25s, stemmed in `language`) over the chunks."""
    require("LlamaIndex's BM25 example", ("llama-index-retrievers-bm25",), BM25_HINT)
    import Stemmer
    from llama_index.retrievers.bm25 import BM25Retriever

    return BM25Retriever.from_defaults(
        nodes=split(documents, chunk_size, chunk_overlap),
        similarity_top_k=k,
        stemmer=Stemmer.Stemmer(language),
        language=language,
    )
