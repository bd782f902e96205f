"""The two contracts of the benchmark protocol, adapters and evaluators, with base classes
that give the optional members their defaults.

Every member the runner relies on is declared here: an adapter's `default_top_k`,
`slice_by` and `ignore_identical_ids`, an evaluator's `aclose()`. Subclass
`BenchmarkAdapter` / `Evaluator` to get their defaults, or define them yourself on any
class that follows the protocol.
"""

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

    async def aclose(self) -> None:
        """Release what the evaluator holds (an LLM judge's HTTP connections) with the event
        loop of the run; called once after the last case."""
        ...


@runtime_checkable
class BenchmarkProtocol(Protocol):
    """An external benchmark turned into documents, cases, run units and default evaluators.

    The adapter never builds knowledge bases, queries them or aggregates scores.
    `documents`, `cases` and `run_units` are the spec's async methods: implement them as
    async generators (`async def ...: yield ...`), which typing spells as methods returning
    an AsyncIterator.

    `default_top_k` is how deep the benchmark's scoring policy retrieves (BEIR: 100) unless
    `runner.top_k` says otherwise; `slice_by` names case metadata keys (such as
    `question_type`) by which the report also summarises scores. With
    `ignore_identical_ids`, a retrieved document whose id is the case id is no answer to it
    (BEIR's convention): the runner retrieves `top_k + 1`, drops that document and keeps
    `top_k` before any evaluator scores, so the convention holds under every evaluator set.
    """

    default_top_k: int
    slice_by: tuple[str, ...]
    ignore_identical_ids: bool

    @property
    def manifest(self) -> BenchmarkManifest: ...

    def resources(self) -> tuple[BenchmarkResource, ...]: ...

    async def prepare(self, workspace: BenchmarkWorkspace) -> PreparedBenchmark: ...

    def documents(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkDocument]: ...

    def cases(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkCase]: ...

    def run_units(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkRunUnit]: ...

    def evaluators(self) -> tuple[BenchmarkEvaluatorProtocol, ...]: ...


class BenchmarkAdapter:
    """Base class of adapters: the defaults of `BenchmarkProtocol`'s optional members.

    A subclass implements `manifest`, `resources`, `prepare`, `documents`, `cases`,
    `run_units` and `evaluators`; it may override `default_top_k` (10), `slice_by` (none)
    and `ignore_identical_ids` (False).
    """

    default_top_k: int = 10
    slice_by: tuple[str, ...] = ()
    ignore_identical_ids: bool = False


class Evaluator:
    """Base class of evaluators: a metric that holds nothing to release (`aclose` does
    nothing). A subclass sets `name` and implements `evaluate`."""

    async def aclose(self) -> None:
        """Nothing to release."""


def protocol_members(protocol: type) -> frozenset[str]:
    """The members a protocol class declares (methods, properties and annotated attributes)."""
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {n for n in vars(protocol) if not n.startswith("_")}
    return frozenset(names)


def missing_members(obj: object, protocol: type) -> list[str]:
    """The members of `protocol` that `obj` lacks, sorted (empty: it follows the protocol)."""
    return sorted(n for n in protocol_members(protocol) if not hasattr(obj, n))
