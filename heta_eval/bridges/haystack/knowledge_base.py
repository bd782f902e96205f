"""HaystackKnowledgeBase: a Haystack pipeline run through `Pipeline.run_async`, the documents
of one of its components mapped back to our provenance and its answer read from the
pipeline's own outputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from heta_eval.bridges.factory import BuildFacts, FactoryKnowledgeBase, Found, RetrievedItem

ANSWER_SOCKETS = ("answers", "replies")


def answer_source(pipeline: Any) -> tuple[str, str] | None:
    """The pipeline output that holds its answer: the first `answers` (an AnswerBuilder's)
    or `replies` (a generator's) output among the pipeline's own outputs; None for a
    pipeline that only retrieves."""
    outputs = pipeline.outputs()
    for socket in ANSWER_SOCKETS:
        for component, sockets in sorted(outputs.items()):
            if socket in sockets:
                return component, socket
    return None


def documents_output(pipeline: Any, component: str) -> str | None:
    """Why the pipeline's `component` cannot give the results (None when it can: it has a
    `documents` output)."""
    outputs = pipeline.outputs(include_components_with_connected_outputs=True)
    if component not in outputs:
        return f"it has no component {component!r} (it has {sorted(outputs)})"
    if "documents" not in outputs[component]:
        return f"its component {component!r} has no 'documents' output"
    return None


def retrieved(documents: Sequence[Any]) -> list[RetrievedItem]:
    """Haystack `Document`s as retrieved items: `split_idx_start` (a DocumentSplitter's) is
    where a chunk starts in the document it was split from."""
    items = []
    for document in documents:
        meta = dict(document.meta or {})
        start = meta.get("split_idx_start")
        items.append(
            RetrievedItem(
                text=document.content or "",
                metadata=meta,
                score=document.score,
                item_id=document.id,
                offset=start if isinstance(start, int) and start >= 0 else None,
            )
        )
    return items


def answer_text(values: Sequence[Any]) -> str | None:
    """The first answer: a GeneratedAnswer's `data`, a ChatMessage's `text`, or a string."""
    from haystack.dataclasses import ChatMessage, GeneratedAnswer

    if not values:
        return None
    first = values[0]
    if isinstance(first, GeneratedAnswer):
        return first.data
    if isinstance(first, ChatMessage):
        return first.text
    return str(first)


class HaystackKnowledgeBase(FactoryKnowledgeBase):
    """A Haystack pipeline behind heta_eval's knowledge-base protocol: the query goes to the
    pipeline's `query_input` inputs, the results are `documents_from`'s documents and the
    answer, when the pipeline gives one, its `answers` or `replies` output."""

    engine = "haystack"

    def __init__(
        self,
        product: Any,
        *,
        kind: str,
        facts: BuildFacts,
        versions: Mapping[str, str],
        query_input: str = "query",
        documents_from: str = "retriever",
    ) -> None:
        super().__init__(product, kind=kind, facts=facts, versions=versions)
        self.query_input = query_input
        self.documents_from = documents_from
        self.answer_from = answer_source(product)

    async def ask(self, text: str, top_k: int) -> Found:
        include = {self.documents_from}
        if self.answer_from is not None:
            include.add(self.answer_from[0])
        output = await self.product.run_async(
            {self.query_input: text}, include_outputs_from=include
        )
        documents = output.get(self.documents_from, {}).get("documents") or []
        answer = None
        if self.answer_from is not None:
            component, socket = self.answer_from
            answer = answer_text(output.get(component, {}).get(socket) or [])
        return Found(retrieved(documents), answer)
