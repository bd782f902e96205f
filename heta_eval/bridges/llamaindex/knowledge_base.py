"""LlamaIndexKnowledgeBase: a LlamaIndex retriever or query engine queried through its own
async call, its nodes mapped back to our provenance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heta_eval.bridges.factory import FactoryKnowledgeBase, Found, RetrievedItem


def retrieved(nodes: Sequence[Any]) -> list[RetrievedItem]:
    """`NodeWithScore`s as retrieved items: a node's `start_char_idx` (set by LlamaIndex's
    splitters) is where it starts in the document it was split from."""
    from llama_index.core.schema import MetadataMode, TextNode

    items = []
    for scored in nodes:
        node = scored.node
        start = node.start_char_idx if isinstance(node, TextNode) else None
        items.append(
            RetrievedItem(
                text=node.get_content(metadata_mode=MetadataMode.NONE),
                metadata=dict(node.metadata or {}),
                score=scored.score,
                item_id=node.node_id,
                offset=start if isinstance(start, int) and start >= 0 else None,
            )
        )
    return items


class LlamaIndexKnowledgeBase(FactoryKnowledgeBase):
    """A LlamaIndex retriever (`aretrieve`) or query engine (`aquery`: answer and source
    nodes) behind heta_eval's knowledge-base protocol."""

    engine = "llamaindex"

    async def ask(self, text: str, top_k: int) -> Found:
        if self.kind == "retriever":
            return Found(retrieved(await self.product.aretrieve(text)))
        from llama_index.core.base.response.schema import Response

        response = await self.product.aquery(text)
        if not isinstance(response, Response):
            raise TypeError(
                f"the query engine answered with a {type(response).__name__}; the bridge "
                "reads a Response (no streaming, no structured output)"
            )
        return Found(retrieved(response.source_nodes), response.response)
