"""What may be said of a query mode's latencies, given how each was measured.

A case's `latency_seconds` is its own query's seconds when it was retrieved alone
(`latency_batch_size` 1, or None when not recorded), and its batch's seconds divided by
the batch's size when it was retrieved in one call with others (`runner.query_batch_size`).
Percentiles are only taken of latencies measured alone: a batch mean is the same number for
every query of its batch, so its p50/p95 say nothing about single queries. Batched
latencies are summarised by their mean, the seconds per query over the batches.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from heta_eval.records.evaluation import EvaluationCaseResult


@dataclass(frozen=True)
class ModeLatencies:
    """One query mode's latencies, split by how they were measured."""

    alone: tuple[float, ...]
    """Seconds of queries retrieved one at a time, sorted."""
    batched: tuple[tuple[float, int], ...]
    """(seconds per query, batch size) of queries retrieved together (batch size > 1)."""

    @property
    def is_batched(self) -> bool:
        """Whether any query of the mode was retrieved in a batch: its latencies then have
        no per-query percentiles (the few measured alone, if any, are not representative)."""
        return bool(self.batched)

    @property
    def batched_mean(self) -> float | None:
        """Seconds per query over the batched queries (their batches' seconds over their
        number), None when there are none."""
        if not self.batched:
            return None
        return sum(seconds for seconds, _ in self.batched) / len(self.batched)

    @property
    def batches(self) -> float:
        """How many batches the batched queries make: each query counts 1 / its batch's size.
        The number of calls when every query of each batch is in the run (a response cache
        may serve only some of a batch measured in an earlier run)."""
        return sum(1 / size for _, size in self.batched)

    @property
    def largest_batch(self) -> int | None:
        """The largest batch size, None when nothing was batched."""
        return max((size for _, size in self.batched), default=None)


def mode_latencies(results: Iterable[EvaluationCaseResult], mode: str) -> ModeLatencies:
    """The latencies of `mode`'s case results (those that have one), split by measurement."""
    alone: list[float] = []
    batched: list[tuple[float, int]] = []
    for result in results:
        if result.query_mode != mode or result.latency_seconds is None:
            continue
        size = result.latency_batch_size
        if size is not None and size > 1:
            batched.append((result.latency_seconds, size))
        else:
            alone.append(result.latency_seconds)
    return ModeLatencies(tuple(sorted(alone)), tuple(batched))


__all__ = ["ModeLatencies", "mode_latencies"]
