"""Hybrid query modes: the rankings of two or more query modes fused into one."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Literal

from pydantic import AfterValidator

from heta_eval.config.ranges import MAX_TOP_K, Range
from heta_eval.kb.index.base import Hits

RRF_K_RANGE = Range(0, 1_000_000)  # beyond, 1 / (k + rank) is the same for every rank
DEPTH_RANGE = Range(1, MAX_TOP_K)
WEIGHT_RANGE = Range(0, 1_000)  # how much a mode counts, relative to the others
RrfK = Annotated[float, AfterValidator(RRF_K_RANGE)]
Depth = Annotated[int, AfterValidator(DEPTH_RANGE)]
Weight = Annotated[float, AfterValidator(WEIGHT_RANGE)]


def _ordered(scores: dict[int, float], top_k: int) -> Hits:
    # Equal fused scores keep the chunk order of the corpus, so fusion is deterministic.
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:top_k]


class ReciprocalRankFusion:
    """Reciprocal rank fusion (Cormack et al., 2009): score = Σ_mode 1 / (k + rank).

    Each mode contributes its top `depth` results (rank 1 is the best); a chunk missing from
    a mode's list gets nothing from it.
    """

    def __init__(self, modes: Sequence[str], k: RrfK = 60.0, depth: Depth = 100) -> None:
        if len(modes) < 2:
            raise ValueError(f"fusion needs at least two query modes, got {list(modes)}")
        RRF_K_RANGE.check("k", k)
        DEPTH_RANGE.check("depth", depth)
        self.modes = tuple(modes)
        self.k = k
        self.depth = depth

    def fuse(self, rankings: Mapping[str, Hits], top_k: int) -> Hits:
        """The fused top `top_k` from each mode's ranking."""
        scores: dict[int, float] = {}
        for mode in self.modes:
            for rank, (position, _) in enumerate(rankings[mode][: self.depth], start=1):
                scores[position] = scores.get(position, 0.0) + 1.0 / (self.k + rank)
        return _ordered(scores, top_k)


class WeightedScoreFusion:
    """Weighted sum of each mode's normalised scores over its top `depth` results.

    `normalization="minmax"` maps a mode's scores to [0, 1] (all equal → 1); `"zscore"`
    standardises them (a single result or zero spread → 0). Missing chunks add nothing.
    """

    def __init__(
        self,
        modes: Sequence[str],
        weights: Sequence[Weight] | None = None,
        normalization: Literal["minmax", "zscore"] = "minmax",
        depth: Depth = 100,
    ) -> None:
        if len(modes) < 2:
            raise ValueError(f"fusion needs at least two query modes, got {list(modes)}")
        DEPTH_RANGE.check("depth", depth)
        weights = list(weights) if weights is not None else [1.0] * len(modes)
        for weight in weights:
            WEIGHT_RANGE.check("each weight", weight)
        if len(weights) != len(modes):
            raise ValueError(f"{len(weights)} weights for {len(modes)} modes")
        if normalization not in ("minmax", "zscore"):
            raise ValueError(f"normalization must be minmax or zscore, got {normalization!r}")
        self.modes = tuple(modes)
        self.weights = weights
        self.normalization = normalization
        self.depth = depth

    def _normalise(self, hits: Hits) -> dict[int, float]:
        if not hits:
            return {}
        values = [score for _, score in hits]
        if self.normalization == "minmax":
            low, high = min(values), max(values)
            span = high - low
            return {p: (s - low) / span if span else 1.0 for p, s in hits}
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        return {p: (s - mean) / std if std else 0.0 for p, s in hits}

    def fuse(self, rankings: Mapping[str, Hits], top_k: int) -> Hits:
        """The fused top `top_k` from each mode's ranking."""
        scores: dict[int, float] = {}
        for mode, weight in zip(self.modes, self.weights, strict=True):
            for position, value in self._normalise(rankings[mode][: self.depth]).items():
                scores[position] = scores.get(position, 0.0) + weight * value
        return _ordered(scores, top_k)
