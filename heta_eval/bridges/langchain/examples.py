"""Example factories for `recipe=langchain` that run offline.

`bm25_retriever`: LangChain's `BM25Retriever` (langchain-community, scoring with rank_bm25's
`BM25Okapi`) over the chunks of a `RecursiveCharacterTextSplitter`; `bm25_answer_chain`: the
same retriever in a retrieval chain (`context` and `answer`, as `create_retrieval_chain`
gives them) whose model is LangChain's echo chat model, `ParrotFakeChatModel`: its answer is
the prompt it was given, so the answer path runs without a model or a network.

Each is a function `(documents, **arguments)`: name it in `recipe.factory._target_` and set
its arguments beside it (`recipe.factory.chunk_size=512`). LangChain is imported when a
factory is called (listing the recipes imports this module), and framework types are `Any`
in the signatures, so that the arguments' own types can be checked at assembly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, Literal

from heta_eval.bridges.factory import require

Tokens = Literal["whitespace", "words"]
NEEDS = ("langchain-community", "langchain-text-splitters", "rank-bm25")
HINT = "pip install 'heta-eval[langchain]'"
PROMPT = "Answer the question from the context.\n\nContext:\n{context}\n\nQuestion: {input}"
_WORD = re.compile(r"\w+")


def whitespace_tokens(text: str) -> list[str]:
    """LangChain's default BM25 preprocessing: `text.split()` (case and punctuation kept)."""
    return text.split()


def word_tokens(text: str) -> list[str]:
    """Lower-cased runs of word characters."""
    return _WORD.findall(text.lower())


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "whitespace": whitespace_tokens,
    "words": word_tokens,
}


def split(documents: Sequence[Any], chunk_size: int | None, chunk_overlap: int) -> list[Any]:
    """Chunks of at most `chunk_size` characters (paragraph, line, word boundaries first),
    each with the documents' metadata and its `start_index`; None keeps documents whole."""
    if chunk_size is None:
        return list(documents)
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, add_start_index=True
    )
    return splitter.split_documents(documents)


def bm25_retriever(
    documents: Sequence[Any],
    *,
    chunk_size: int | None = 1000,
    chunk_overlap: int = 0,
    k: int = 100,
    k1: float = 1.5,
    b: float = 0.75,
    epsilon: float = 0.25,
    tokens: Tokens = "whitespace",
) -> Any:
    """LangChain's `BM25Retriever` over the documents' chunks, `k` results a query.

    `k1`, `b`, `epsilon` are rank_bm25's `BM25Okapi` parameters (its defaults);
    `tokens="whitespace"` is LangChain's own preprocessing, `"words"` lower-cases and keeps
    runs of word characters.
    """
    require("LangChain's BM25 example", NEEDS, HINT)
    from langchain_community.retrievers import BM25Retriever

    return BM25Retriever.from_documents(
        split(documents, chunk_size, chunk_overlap),
        k=k,
        bm25_params={"k1": k1, "b": b, "epsilon": epsilon},
        preprocess_func=TOKENIZERS[tokens],
    )


def _joined(inputs: dict[str, Any]) -> dict[str, Any]:
    return {**inputs, "context": "\n\n".join(d.page_content for d in inputs["context"])}


def bm25_answer_chain(
    documents: Sequence[Any],
    *,
    chunk_size: int | None = 1000,
    chunk_overlap: int = 0,
    k: int = 4,
    tokens: Tokens = "whitespace",
) -> Any:
    """A retrieval chain: `bm25_retriever`'s top `k` chunks as `context`, and as `answer`
    what `ParrotFakeChatModel` (LangChain's echo model) says to the prompt, i.e. the prompt.
    Its input is `{"input": query}`."""
    from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    retriever = bm25_retriever(
        documents, chunk_size=chunk_size, chunk_overlap=chunk_overlap, k=k, tokens=tokens
    )
    answer = (
        RunnableLambda(_joined)
        | ChatPromptTemplate.from_template(PROMPT)
        | ParrotFakeChatModel()
        | StrOutputParser()
    )
    return RunnablePassthrough.assign(context=itemgetter("input") | retriever).assign(answer=answer)
