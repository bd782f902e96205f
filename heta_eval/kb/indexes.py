"""Search index protocols shared by every retrieval method."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from heta_eval.kb.documents import Chunk

Hits = list[tuple[int, float]]
"""Ranked (chunk position, score) pairs for one query, best first."""


class SearchIndex(Protocol):
    """A built index that ranks the chunks it was built from.

    An index that can also `save(directory)` (and whose builder can `load(directory)`)
    takes part in the build cache; others are rebuilt each time. An index whose `search`
    is local and vectorised says `batches_queries = True`: the runner then sends it many
    queries per call (an index calling a remote endpoint keeps one query per call, so that
    a slow or failing query delays or fails only its own case).
    """

    def search(self, queries: Sequence[str], top_k: int) -> list[Hits]: ...


class IndexBuilder(Protocol):
    """Builds a SearchIndex over chunks; its settings are part of the recipe."""

    def build(self, chunks: Sequence[Chunk]) -> SearchIndex: ...


def persistable(builder: object, index: object) -> bool:
    """Whether this builder/index pair can be saved to and loaded from the build cache."""
    return callable(getattr(builder, "load", None)) and callable(getattr(index, "save", None))


def batches_queries(index: object) -> bool:
    """Whether `index` asks to be searched with many queries per call (see SearchIndex)."""
    return getattr(index, "batches_queries", False) is True
