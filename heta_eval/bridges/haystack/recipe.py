"""HaystackRecipe: a Haystack pipeline, built by a user's factory, as a recipe.

The factory receives the benchmark's documents as `haystack.Document`s (our provenance in
their `meta`, `{source_key}#{segment}` as their id) and returns a `Pipeline`. Each query runs
it with `run_async`, the query text given to every input named `query_input` (Haystack
hands a flat input to each component that takes it); the results are the documents of the
component `documents_from`, and the answer, when the pipeline ends in an AnswerBuilder or a
generator, its `answers` or `replies`.

Haystack sends usage telemetry unless told not to: creating a recipe sets
`HAYSTACK_TELEMETRY_ENABLED=False` in this process's environment unless it is already set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from heta_eval.bridges.factory import BuildFacts, FactoryRecipe, SourceText
from heta_eval.bridges.haystack.knowledge_base import (
    HaystackKnowledgeBase,
    answer_source,
    documents_output,
)


class HaystackRecipe(FactoryRecipe):
    """A recipe whose knowledge base is a Haystack `Pipeline` from a user's factory
    (`factory`: a `_target_` spec of a callable `(documents, **arguments)`). A pipeline's
    depth is its retriever's (`top_k` of the example factories); results past
    `runner.top_k` are cut."""

    framework = "Haystack"
    extra = "haystack"
    requires = ("haystack-ai",)
    answering_kinds = frozenset({"answer_pipeline"})

    def __init__(
        self,
        *,
        name: str,
        factory: Mapping[str, Any],
        parser: Mapping[str, Any] | None = None,
        query_mode: str | None = None,
        query_input: str = "query",
        documents_from: str = "retriever",
        description: str | None = None,
    ) -> None:
        os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
        self.query_input = str(query_input)
        self.documents_from = str(documents_from)
        super().__init__(
            name=name,
            factory=factory,
            parser=parser,
            query_mode=query_mode,
            description=description,
        )

    def settings(self) -> dict[str, Any]:
        return {"query_input": self.query_input, "documents_from": self.documents_from}

    def to_documents(self, texts: Sequence[SourceText]) -> list[Any]:
        from haystack import Document

        return [Document(content=t.text, meta=dict(t.metadata), id=t.key) for t in texts]

    def kind_of(self, product: Any) -> str:
        from haystack import Pipeline

        if not isinstance(product, Pipeline):
            raise TypeError("the Haystack bridge runs a haystack.Pipeline")
        why = documents_output(product, self.documents_from)
        if why is not None:
            raise TypeError(f"recipe.documents_from: the pipeline gives no results: {why}")
        return "pipeline" if answer_source(product) is None else "answer_pipeline"

    def knowledge_base(
        self, product: Any, *, kind: str, facts: BuildFacts
    ) -> HaystackKnowledgeBase:
        return HaystackKnowledgeBase(
            product,
            kind=kind,
            facts=facts,
            versions=self.versions,
            query_input=self.query_input,
            documents_from=self.documents_from,
        )
