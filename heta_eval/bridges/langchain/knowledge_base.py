"""LangChainKnowledgeBase: a LangChain retriever or chain queried through its own async
call, its documents mapped back to our provenance."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from heta_eval.bridges.factory import BuildFacts, FactoryKnowledgeBase, Found, RetrievedItem

# Metadata keys LangChain retrievers use for a document's score (the first numeric one wins).
SCORE_KEYS = ("score", "relevance_score", "_score")


def _score(metadata: Mapping[str, Any]) -> float | None:
    for key in SCORE_KEYS:
        value = metadata.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def retrieved(documents: Sequence[Any]) -> list[RetrievedItem]:
    """LangChain `Document`s as retrieved items: `start_index` (a splitter's
    `add_start_index`) is where the chunk starts in the document it was split from."""
    items = []
    for document in documents:
        metadata = dict(document.metadata or {})
        start = metadata.get("start_index")
        items.append(
            RetrievedItem(
                text=document.page_content,
                metadata=metadata,
                score=_score(metadata),
                item_id=document.id,
                offset=start if isinstance(start, int) and start >= 0 else None,
            )
        )
    return items


def answer_text(answer: Any) -> str | None:
    """A chain's answer as text: a string, or a message's text."""
    from langchain_core.messages import BaseMessage

    if answer is None or isinstance(answer, str):
        return answer
    if isinstance(answer, BaseMessage):
        return answer.text
    return str(answer)


class LangChainKnowledgeBase(FactoryKnowledgeBase):
    """A LangChain retriever (`ainvoke(query)` gives documents) or chain (`ainvoke({input:
    query})` gives `context` and `answer`) behind heta_eval's knowledge-base protocol."""

    engine = "langchain"

    def __init__(
        self,
        product: Any,
        *,
        kind: str,
        facts: BuildFacts,
        versions: Mapping[str, str],
        query_input: str = "input",
    ) -> None:
        super().__init__(product, kind=kind, facts=facts, versions=versions)
        self.query_input = query_input

    async def ask(self, text: str, top_k: int) -> Found:
        if self.kind == "retriever":
            return Found(retrieved(await self.product.ainvoke(text)))
        output = await self.product.ainvoke({self.query_input: text})
        if not isinstance(output, Mapping) or "context" not in output:
            shown = sorted(output) if isinstance(output, Mapping) else type(output).__name__
            raise TypeError(
                "the chain must return a mapping with the retrieved documents under "
                f"'context' and the answer under 'answer' (create_retrieval_chain's "
                f"output); it returned {shown}"
            )
        return Found(retrieved(output["context"] or ()), answer_text(output.get("answer")))
