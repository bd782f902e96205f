"""The protocols every retrieval method follows (index builder, built index, fusion), with
base classes that give their optional members the defaults."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from heta_eval.kb.documents import Chunk

Hits = list[tuple[int, float]]
"""Ranked (chunk position, score) pairs for one query, best first."""


@runtime_checkable
class SearchIndex(Protocol):
    """A built index that ranks the chunks it was built from.

    `exact_in_batches`: queries searched together get the hits, scores and tie order each
    gets alone (BM25), so the runner may retrieve cases in batches. `persistent`: `save`
    writes the index under a directory and its builder's `load` reads it back, so knowledge
    bases with it take part in the build cache; others are rebuilt each time.
    """

    exact_in_batches: bool
    persistent: bool

    def search(self, queries: Sequence[str], top_k: int) -> list[Hits]: ...

    def save(self, directory: Path) -> None: ...


class BaseSearchIndex:
    """Base class of built indexes: not exact in batches, not persistent. A subclass
    implements `search`; a persistent one sets `persistent` and implements `save`."""

    exact_in_batches: bool = False
    persistent: bool = False

    def save(self, directory: Path) -> None:
        """Refused: the index is not persistent."""
        raise TypeError(f"{type(self).__name__} is not persistent: it cannot be saved")


class ChunkAccumulator(Protocol):
    """An index built batch by batch: chunk texts are added as they are made, the index is
    made once all are in."""

    def add(self, texts: Iterable[str]) -> None: ...

    def finish(self) -> SearchIndex: ...


@runtime_checkable
class IndexBuilder(Protocol):
    """Builds a SearchIndex over chunks; its settings are part of the recipe.

    `start()` gives a `ChunkAccumulator` that takes the chunks in batches as the build makes
    them (None: the index is built from the complete chunks with `build`); `load` reads an
    index its persistent indexes saved.
    """

    def build(self, chunks: Sequence[Chunk]) -> SearchIndex: ...

    def start(self) -> ChunkAccumulator | None: ...

    def load(self, directory: Path) -> SearchIndex: ...


class BaseIndexBuilder:
    """Base class of index builders: built from the complete chunks, loading nothing. A
    subclass implements `build`; one whose indexes are persistent implements `load`."""

    def start(self) -> ChunkAccumulator | None:
        """None: the index is built from the complete chunks (`build`)."""
        return None

    def load(self, directory: Path) -> SearchIndex:
        """Refused: the builder's indexes are not persistent."""
        raise TypeError(f"{type(self).__name__} cannot load an index: its indexes are rebuilt")


@runtime_checkable
class Fusion(Protocol):
    """A hybrid query mode: the rankings of its `modes` fused into one; each mode's top
    `depth` results take part."""

    modes: tuple[str, ...]
    depth: int

    def fuse(self, rankings: Mapping[str, Hits], top_k: int) -> Hits: ...
