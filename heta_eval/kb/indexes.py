"""Search index protocols shared by every retrieval method."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from heta_eval.kb.documents import Chunk

Hits = list[tuple[int, float]]
"""Ranked (chunk position, score) pairs for one query, best first."""


class SearchIndex(Protocol):
    """A built index that ranks the chunks it was built from."""

    def search(self, queries: Sequence[str], top_k: int) -> list[Hits]: ...


class IndexBuilder(Protocol):
    """Builds a SearchIndex over chunks; its settings are part of the recipe."""

    def build(self, chunks: Sequence[Chunk]) -> SearchIndex: ...
