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
    takes part in the build cache; others are rebuilt each time.
    """

    def search(self, queries: Sequence[str], top_k: int) -> list[Hits]: ...


class IndexBuilder(Protocol):
    """Builds a SearchIndex over chunks; its settings are part of the recipe."""

    def build(self, chunks: Sequence[Chunk]) -> SearchIndex: ...


def persistable(builder: object, index: object) -> bool:
    """Whether this builder/index pair can be saved to and loaded from the build cache."""
    return callable(getattr(builder, "load", None)) and callable(getattr(index, "save", None))
