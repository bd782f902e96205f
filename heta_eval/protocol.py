"""The two contracts of the benchmark protocol: adapters and evaluators."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from heta_eval.records import (
    BenchmarkCase,
    BenchmarkDocument,
    BenchmarkManifest,
    BenchmarkResource,
    BenchmarkRunUnit,
    BenchmarkWorkspace,
    EvaluationScore,
    PreparedBenchmark,
    QueryResponse,
)


@runtime_checkable
class BenchmarkEvaluatorProtocol(Protocol):
    """Scores one case's response with one metric; never does I/O (an LLM judge excepted)."""

    @property
    def name(self) -> str:
        """Metric name as it appears in reports, e.g. `evidence_recall@5`."""
        ...

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore: ...


@runtime_checkable
class BenchmarkProtocol(Protocol):
    """An external benchmark turned into documents, cases, run units and default evaluators.

    The adapter never builds knowledge bases, queries them or aggregates scores.
    `documents`, `cases` and `run_units` are the spec's async methods: implement them as
    async generators (`async def ...: yield ...`), which typing spells as methods returning
    an AsyncIterator.

    Optionally, an adapter may define `slice_by: tuple[str, ...]`: case metadata keys (such
    as `question_type`) by which the report also summarises scores.
    """

    @property
    def manifest(self) -> BenchmarkManifest: ...

    def resources(self) -> tuple[BenchmarkResource, ...]: ...

    async def prepare(self, workspace: BenchmarkWorkspace) -> PreparedBenchmark: ...

    def documents(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkDocument]: ...

    def cases(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkCase]: ...

    def run_units(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkRunUnit]: ...

    def evaluators(self) -> tuple[BenchmarkEvaluatorProtocol, ...]: ...
