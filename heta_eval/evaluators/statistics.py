"""Summary statistics of per-case scores: mean, standard deviation, bootstrap intervals."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Resampling matrices are built in blocks of at most this many cells (memory bound).
_BLOCK_CELLS = 2_000_000


def sample_std(values: Sequence[float]) -> float | None:
    """Sample standard deviation (n - 1 denominator); None below two values."""
    if len(values) < 2:
        return None
    return float(np.std(np.asarray(values, dtype=float), ddof=1))


def bootstrap_ci(
    values: Sequence[float], resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile bootstrap confidence interval of the mean, seeded and reproducible.

    Resamples cases with replacement `resamples` times; returns the (1-c)/2 and (1+c)/2
    quantiles of the resampled means, or None without values. One value gives (v, v).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    data = np.asarray(values, dtype=float)
    n = len(data)
    if n == 0:
        return None
    if n == 1 or np.all(data == data[0]):
        return float(data[0]), float(data[0])
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    block = max(1, _BLOCK_CELLS // n)
    for start in range(0, resamples, block):
        stop = min(start + block, resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = data[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)
