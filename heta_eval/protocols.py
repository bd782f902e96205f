"""Every protocol of heta_eval, with a base class for each that gives its optional members
their defaults: the benchmark adapter, the evaluator, the recipe, the knowledge base it
builds (and the build plan heta_eval's own knowledge base is built from), and the tracker.

Every member the code relies on is declared here; nothing reads a member around these
contracts (no `getattr` probing). Subclass `BenchmarkAdapter`, `Evaluator`, `BaseRecipe`,
`BaseKnowledgeBase` or `BaseTracker` to get the defaults, or define every member yourself on
any class that follows the protocol: `missing_members` says what such a class lacks, and the
run refuses it before any work.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from heta_eval.records import (
    BenchmarkCase,
    BenchmarkContents,
    BenchmarkDocument,
    BenchmarkManifest,
    BenchmarkResource,
    BenchmarkRunUnit,
    BenchmarkWorkspace,
    EvaluationReport,
    EvaluationScore,
    KnowledgeBaseManifest,
    PreparedBenchmark,
    QueryResponse,
)

if TYPE_CHECKING:  # the engine's types; the engine itself depends on these protocols
    from heta_eval.kb.answering import Answerer
    from heta_eval.kb.chunking import Chunker
    from heta_eval.kb.documents import RawSource
    from heta_eval.kb.index.base import Fusion, IndexBuilder
    from heta_eval.kb.parsers.base import Parser
    from heta_eval.kb.rerank import Reranker
    from heta_eval.kb.store import ObjectStore


# -- evaluator ---------------------------------------------------------------------------


@runtime_checkable
class BenchmarkEvaluatorProtocol(Protocol):
    """Scores one case's response with one metric; never does I/O (an LLM judge excepted)."""

    @property
    def name(self) -> str:
        """Metric name as it appears in reports, e.g. `evidence_recall@5`."""
        ...

    @property
    def k(self) -> int | None:
        """How many of a response's results the metric looks at (`recall@10`: 10); None when
        it is not cut at a rank. A `k` deeper than the run retrieves is warned about."""
        ...

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore: ...

    async def aclose(self) -> None:
        """Release what the evaluator holds (an LLM judge's HTTP connections) with the event
        loop of the run; called once after the last case."""
        ...


class Evaluator:
    """Base class of evaluators: a metric not cut at a rank (`k` is None) that holds nothing
    to release (`aclose` does nothing). A subclass sets `name` and implements `evaluate`."""

    k: int | None = None

    async def aclose(self) -> None:
        """Nothing to release."""


# -- benchmark adapter -------------------------------------------------------------------


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
    `allow_private_urls` lets documents' `source_uri` name loopback and private hosts
    (`True`: every host; a set of host names: those). A benchmark with a split of its own to
    tune on names it in `tuning_split()` and gives itself on another split with `with_split`
    (hyperparameter searches tune there and test on the configured split).
    """

    default_top_k: int
    slice_by: tuple[str, ...]
    ignore_identical_ids: bool
    allow_private_urls: bool | frozenset[str]

    @property
    def manifest(self) -> BenchmarkManifest: ...

    def resources(self) -> tuple[BenchmarkResource, ...]: ...

    async def prepare(self, workspace: BenchmarkWorkspace) -> PreparedBenchmark: ...

    def documents(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkDocument]: ...

    def cases(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkCase]: ...

    def run_units(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkRunUnit]: ...

    def evaluators(self) -> tuple[BenchmarkEvaluatorProtocol, ...]: ...

    def tuning_split(self) -> str | None:
        """The split to tune on, when the benchmark has one besides its own; else None."""
        ...

    def with_split(
        self, split: str, metadata: Mapping[str, str] | None = None
    ) -> BenchmarkProtocol:
        """The same benchmark on `split` (its manifest's metadata extended by `metadata`)."""
        ...


class BenchmarkAdapter:
    """Base class of adapters: the defaults of `BenchmarkProtocol`'s optional members.

    A subclass implements `manifest`, `resources`, `prepare`, `documents`, `cases`,
    `run_units` and `evaluators`; it may override `default_top_k` (10), `slice_by` (none),
    `ignore_identical_ids` (False), `allow_private_urls` (False) and, with a split to tune
    on, `tuning_split` (None) and `with_split`.
    """

    default_top_k: int = 10
    slice_by: tuple[str, ...] = ()
    ignore_identical_ids: bool = False
    allow_private_urls: bool | frozenset[str] = False

    def tuning_split(self) -> str | None:
        """No split to tune on: a search tunes on a share of the cases."""
        return None

    def with_split(
        self, split: str, metadata: Mapping[str, str] | None = None
    ) -> BenchmarkProtocol:
        """Refused: the benchmark has one split only."""
        raise ValueError(f"benchmark {type(self).__name__} has no split {split!r} to evaluate")


# -- knowledge base ----------------------------------------------------------------------


@runtime_checkable
class KnowledgeBaseLike(Protocol):
    """A built knowledge base the runner queries.

    The runner asks for each case with `query_case` (a knowledge base that answers cases by
    id, such as a replay's, overrides it; by default it queries the case's text). For a mode
    whose `exact_in_batches(mode)` is true, the runner may instead retrieve several cases'
    texts in one `query_many` call: each query must get what `query_case` gives it alone.
    `aclose` releases what the knowledge base holds (shards, connections) once its unit is done.
    """

    def manifest(self) -> KnowledgeBaseManifest: ...

    async def query(
        self, text: str, *, mode: str, top_k: int = 10, options: Mapping[str, Any] | None = None
    ) -> QueryResponse: ...

    async def query_case(
        self, case: BenchmarkCase, *, unit_id: str, mode: str, top_k: int = 10
    ) -> QueryResponse: ...

    async def query_many(
        self,
        texts: Sequence[str],
        *,
        mode: str,
        top_k: int = 10,
        options: Mapping[str, Any] | None = None,
    ) -> list[QueryResponse]: ...

    def exact_in_batches(self, mode: str) -> bool: ...

    async def aclose(self) -> None: ...


class BaseKnowledgeBase(ABC):
    """Base class of knowledge bases: the defaults of `KnowledgeBaseLike`'s optional members.

    A subclass implements `manifest` and `query`; by default a case is answered by querying
    its text, several texts one after another, no mode is exact in batches and there is
    nothing to release.
    """

    @abstractmethod
    def manifest(self) -> KnowledgeBaseManifest:
        """What was built."""

    @abstractmethod
    async def query(
        self, text: str, *, mode: str, top_k: int = 10, options: Mapping[str, Any] | None = None
    ) -> QueryResponse:
        """The response to `text` with query mode `mode`, at most `top_k` results."""

    async def query_case(
        self, case: BenchmarkCase, *, unit_id: str, mode: str, top_k: int = 10
    ) -> QueryResponse:
        """The response to the case's query text."""
        return await self.query(case.query, mode=mode, top_k=top_k)

    async def query_many(
        self,
        texts: Sequence[str],
        *,
        mode: str,
        top_k: int = 10,
        options: Mapping[str, Any] | None = None,
    ) -> list[QueryResponse]:
        """Each text queried alone, one after another."""
        return [await self.query(t, mode=mode, top_k=top_k, options=options) for t in texts]

    def exact_in_batches(self, mode: str) -> bool:
        """No mode is retrieved in batches."""
        return False

    async def aclose(self) -> None:  # noqa: B027 (a default, not an abstract method)
        """Nothing to release."""


# -- recipe ------------------------------------------------------------------------------


@runtime_checkable
class RecipeLike(Protocol):
    """A build plan: its name, the query modes it offers, a JSON manifest, and a builder.

    `create_knowledge_base` builds from raw objects the runner wrote to `store` under the
    sources' keys (`raw/benchmarks/...`). `check_contents(contents)` checks the recipe
    against the loaded benchmark before any work (a ValueError stops the run), and
    `content_digests()` names the digests of the files the recipe reads, which become part
    of the run's identity (a replay's files).
    """

    @property
    def name(self) -> str: ...

    @property
    def query_modes(self) -> tuple[str, ...]: ...

    def manifest(self) -> dict[str, Any]: ...

    async def create_knowledge_base(
        self, *, name: str, store: ObjectStore, sources: Sequence[RawSource]
    ) -> KnowledgeBaseLike: ...

    def check_contents(self, contents: BenchmarkContents) -> None: ...

    def content_digests(self) -> dict[str, str]: ...


class BaseRecipe:
    """Base class of recipes: the defaults of `RecipeLike`'s optional members. A subclass
    sets `name` and `query_modes` and implements `manifest` and `create_knowledge_base`."""

    def check_contents(self, contents: BenchmarkContents) -> None:
        """Nothing to check against the benchmark."""

    def content_digests(self) -> dict[str, str]:
        """No files read: nothing to add to the run's identity."""
        return {}


@runtime_checkable
class BuildPlan(Protocol):
    """What heta_eval's own knowledge base is built from and queried with; `KnowledgeRecipe`
    is one.

    `parser`, `chunker`, each of `indexes` and of `fusions` are `_target_` specs (their
    `_target_` names the component in the build steps of the manifest); the `create_*`
    methods instantiate them. Declared here, below both, so that the knowledge base does
    not import the recipe that builds it.
    """

    @property
    def name(self) -> str: ...

    @property
    def query_modes(self) -> tuple[str, ...]: ...

    @property
    def parser(self) -> Mapping[str, Any]: ...

    @property
    def chunker(self) -> Mapping[str, Any]: ...

    @property
    def indexes(self) -> Mapping[str, Mapping[str, Any]]: ...

    @property
    def fusions(self) -> Mapping[str, Mapping[str, Any]]: ...

    def create_parser(self) -> Parser: ...

    def create_chunker(self) -> Chunker: ...

    def create_index_builders(self) -> dict[str, IndexBuilder]: ...

    def create_fusions(self) -> dict[str, Fusion]: ...

    def create_reranker(self) -> Reranker | None: ...

    def create_answerer(self) -> Answerer | None: ...


# -- tracker -----------------------------------------------------------------------------


@runtime_checkable
class Tracker(Protocol):
    """Projects one run directory into a tracking backend: its settings, report and files.

    `run_id` is None until `start` or `resume`; `uri` says where runs go (None: nowhere),
    `experiment` under which name (None: no experiments). `connect` does the slow part of
    getting ready (imports, opening the store) and may run in a background thread while the
    benchmark loads. A backend failure never raises out of `start`, `finish` or `end`: the
    run directory is marked unsynced instead (`heta-eval-sync` replays it).
    """

    run_id: str | None
    uri: str | None
    experiment: str | None

    def connect(self) -> None: ...

    def start(
        self,
        *,
        run_name: str,
        config: Mapping[str, Any],
        tags: Mapping[str, str],
        run_dir: Path,
        parent_run_id: str | None = None,
        sweep_dir: Path | None = None,
        start_time: float | None = None,
    ) -> None:
        """Create the run for `run_dir`; `start_time` (seconds since the epoch) is when its
        evaluation began, so that the run's start and duration are the evaluation's."""
        ...

    def resume(self, run_id: str, run_dir: Path) -> bool:
        """Continue an interrupted run; False when it cannot be found (start a new one)."""
        ...

    def finish(self, report: EvaluationReport, status: str = "FINISHED") -> None:
        """Log the run directory (written before this call) and end the run."""
        ...

    def end(self, status: str = "FINISHED") -> None:
        """End the run without a report (it failed or was stopped)."""
        ...

    def describe(self) -> str:
        """Where the run can be seen (a URL, or the command that opens the UI)."""
        ...


class BaseTracker:
    """Base class of trackers: the defaults of `Tracker`'s optional members. A subclass
    implements `start`, `finish`, `end` and `describe`; by default it has no run yet, keeps
    runs nowhere, needs no connecting and cannot continue a run."""

    run_id: str | None = None
    uri: str | None = None
    experiment: str | None = None

    def connect(self) -> None:
        """Nothing to get ready."""

    def resume(self, run_id: str, run_dir: Path) -> bool:
        """No run can be continued: a new one is started."""
        return False


# -- conformance -------------------------------------------------------------------------


def protocol_members(protocol: type) -> frozenset[str]:
    """The members a protocol class declares (methods, properties and annotated attributes)."""
    names = set(inspect.get_annotations(protocol))
    names |= {n for n in vars(protocol) if not n.startswith("_")}
    return frozenset(names)


def missing_members(obj: object, protocol: type) -> list[str]:
    """The members of `protocol` that `obj` lacks, sorted (empty: it follows the protocol)."""
    return sorted(n for n in protocol_members(protocol) if not hasattr(obj, n))
