"""Evaluating one run unit: build (or load) its knowledge base, query and score its cases."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from heta_eval.async_run import run_sync
from heta_eval.json_cache import run_cache
from heta_eval.kb import ObjectStore, RawSource
from heta_eval.kb.build_cache import BuildCache, CachedResponse, CacheStats
from heta_eval.kb.protocols import KnowledgeBaseLike, RecipeLike
from heta_eval.progress import NO_PROGRESS, ProgressReporter
from heta_eval.protocol import BenchmarkEvaluatorProtocol
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkDocument,
    BenchmarkRunUnit,
    EvaluationCaseResult,
    EvaluationError,
    EvaluationScore,
    KnowledgeBaseManifest,
    KnowledgeBaseScope,
    QueryResponse,
)
from heta_eval.records.evaluation import expected_for_report
from heta_eval.run.journal import CaseKey
from heta_eval.run.returns import checked_score
from heta_eval.run.settings import QUERY_BATCH_SIZE
from heta_eval.run.shards import ShardPlan

log = logging.getLogger(__name__)


KeyLayout = tuple[str, str]
"""(prefix, name_suffix) of the run's document keys: `{prefix}{id}/{id}{name_suffix}`."""


class Measured(NamedTuple):
    """A case's response with its latency and how that was measured: `batch_size` queries
    retrieved in one call, the latency their seconds over their number (1: alone)."""

    response: QueryResponse
    latency_seconds: float | None
    batch_size: int | None


@dataclass(frozen=True)
class UnitPlan:
    """A run unit with its documents and the cases to evaluate (after `limit`)."""

    unit: BenchmarkRunUnit
    documents: tuple[BenchmarkDocument, ...]
    cases: tuple[BenchmarkCase, ...]


@dataclass
class UnitOutcome:
    """What evaluating a unit produced: its KB manifest (None when not built) and results."""

    unit_id: str
    manifest: KnowledgeBaseManifest | None
    results: list[EvaluationCaseResult]
    cache: CacheStats = field(default_factory=CacheStats)


def error_record(stage: str, exc: BaseException, evaluator: str | None = None) -> EvaluationError:
    """An EvaluationError for an exception raised at `stage`."""
    return EvaluationError(
        stage=stage,  # type: ignore[arg-type]
        error_type=type(exc).__name__,
        message=str(exc)[:2000],
        evaluator=evaluator,
    )


def retrieved_items(
    response: QueryResponse, key_layout: KeyLayout | None = None
) -> list[dict[str, Any]]:
    """The compact form of a response's results kept in a case result (`RetrievedItem`).

    Plain dicts, validated into RetrievedItem records by the case result in one call. An
    item's `source_key` is left out (None) when it is the key `key_layout` (the run's
    document key layout) gives its document: the report's `run.document_keys` gives it
    back, and at 100 items a case it was a third of every case result's JSON.
    """
    prefix, suffix = key_layout if key_layout is not None else ("", None)
    items = []
    for r in response.results:
        source = r.source
        key: str | None = source.source_key
        document = source.document_id
        if suffix is not None and key == f"{prefix}{document}/{document}{suffix}":
            key = None
        items.append(
            {
                "id": r.id,
                "score": r.score,
                "document_id": document,
                "chunk_id": source.chunk_id,
                "source_key": key,
                "page_index": source.page_index,
                "start_char": source.start_char,
                "end_char": source.end_char,
            }
        )
    return items


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a unit's cases are evaluated.

    Each case adds ~100 retrieved-item records that live until the report; the collector's
    full passes walk all of them again and again (on 10k cases, a third of the run), yet
    find almost no cycles to free (reference counting frees the rest). Restored after.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_frozen = threading.Lock()
_frozen_depth = 0


@contextlib.contextmanager
def heap_frozen() -> Iterator[None]:
    """Keep the objects that exist now out of the cyclic collector's passes for a while.

    A build allocates hundreds of thousands of objects (texts, chunks, token lists); the
    full collections they trigger would also walk everything already loaded (the
    benchmark's documents and cases), a tenth of a SciFact build. Frozen objects are only
    skipped, not lost: new garbage cycles (a PDF reader's) are still collected, and the
    frozen objects are handed back to the collector when the outermost of nested (or
    concurrent) uses ends.
    """
    global _frozen_depth
    with _frozen:
        gc.freeze()
        _frozen_depth += 1
    try:
        yield
    finally:
        with _frozen:
            _frozen_depth -= 1
            if _frozen_depth == 0:
                gc.unfreeze()


def recipe_answers(recipe: RecipeLike) -> bool | None:
    """Whether a recipe generates answers: its manifest's `answerer` is set (None when the
    manifest does not name one either way)."""
    described = recipe.manifest()
    return described["answerer"] is not None if "answerer" in described else None


def without_identical_ids(response: QueryResponse, case_id: str, top_k: int) -> QueryResponse:
    """The response without results from the document whose id is the query's, cut to top_k."""
    kept = [r for r in response.results if r.source.document_id != case_id][:top_k]
    return response.model_copy(update={"results": tuple(kept)})


@dataclass
class UnitEvaluator:
    """Everything needed to evaluate units, in a form that can be sent to a worker process."""

    recipe: RecipeLike
    evaluators: tuple[BenchmarkEvaluatorProtocol, ...]
    query_modes: tuple[str, ...]
    top_k: int
    max_concurrent_queries: int
    slice_by: tuple[str, ...]
    store: ObjectStore
    cache: BuildCache
    # The benchmark's convention (BEIR's ignore_identical_ids): a query's own document is no
    # answer to it. Retrieve one more, drop it, keep top_k, whatever evaluators score.
    ignore_identical_ids: bool = False
    # runner.shards: each unit's corpus split into shards (built on them, never cached).
    shards: ShardPlan | None = None
    # runner.query_batch_size: cases of an exact-in-batches mode retrieved in one call (1:
    # each alone). A batch's latency is its seconds shared out, labelled with its size.
    query_batch_size: int = QUERY_BATCH_SIZE
    # The run's document key layout (`StoredDocumentKeys`): a retrieved item whose key it
    # gives is kept without its key (None: every item keeps its key).
    key_layout: KeyLayout | None = None

    @property
    def depth(self) -> int:
        """Results retrieved per query: one more than top_k when the query's own document
        is dropped (`ignore_identical_ids`)."""
        return self.top_k + 1 if self.ignore_identical_ids else self.top_k

    def batches(self, kb: KnowledgeBaseLike) -> bool:
        """Whether some of the run's query modes are retrieved in batches on `kb`: the
        knowledge base gives each query of the mode what it gets alone and
        `query_batch_size` is more than 1."""
        exact = getattr(kb, "exact_in_batches", None)
        return (
            self.query_batch_size > 1
            and exact is not None
            and getattr(kb, "query_case", None) is None
            and any(exact(mode) for mode in self.query_modes)
        )

    def from_cache(self, kb: KnowledgeBaseLike, mode: str, cached: CachedResponse) -> Measured:
        """A cached response with the latency measured when it was stored (an evaluator-only
        change re-scores without querying). An entry that did not record how its latency
        was measured, of a mode that may have been batched, has no latency to give."""
        size = cached.latency_batch_size
        latency = cached.latency_seconds
        if size is None and latency is not None:
            exact = getattr(kb, "exact_in_batches", None)
            if exact is not None and exact(mode):
                latency = None  # a batch mean or a query's own seconds: nobody knows
            else:
                size = 1
        return Measured(cached.response, latency, size if latency is not None else None)

    async def query_in_batches(
        self, kb: KnowledgeBaseLike, todo: Sequence[tuple[BenchmarkCase, str]]
    ) -> dict[tuple[str, str], Measured]:
        """The responses (and latencies) of the cases in `todo` that can be retrieved
        together: from the response cache, or in one `query_many` call per query mode whose
        batches give every query what it gets alone (`exact_in_batches`, BM25). Each gets
        the batch's seconds divided evenly as its latency, labelled with the batch's size
        (`latency_batch_size`). Cases of other modes, and of a batch that fails, are left
        out: `evaluate_case` queries them one at a time (and records their errors)."""
        exact = getattr(kb, "exact_in_batches", None)
        if exact is None or getattr(kb, "query_case", None) is not None:
            return {}
        answered: dict[tuple[str, str], Measured] = {}
        pending: dict[str, list[tuple[BenchmarkCase, str | None]]] = {}
        for case, mode in todo:
            if not exact(mode):
                continue
            key = self.cache.response_key(kb.manifest(), self.recipe, case.query, mode, self.depth)
            cached = self.cache.get_response(key) if key is not None else None
            if cached is not None:
                answered[case.case_id, mode] = self.from_cache(kb, mode, cached)
            else:
                pending.setdefault(mode, []).append((case, key))
        for mode, cases in pending.items():
            started = time.perf_counter()
            try:
                responses = await kb.query_many(  # type: ignore[attr-defined]
                    [case.query for case, _ in cases], mode=mode, top_k=self.depth
                )
            except Exception as exc:
                log.debug("batched %s queries failed (%s); querying one at a time", mode, exc)
                continue
            size = len(cases)
            latency = (time.perf_counter() - started) / size
            for (case, key), response in zip(cases, responses, strict=True):
                answered[case.case_id, mode] = Measured(response, latency, size)
                if key is not None:
                    self.cache.put_response(key, response, latency, size)
        return answered

    @functools.cached_property
    def answers(self) -> bool | None:
        """Whether the recipe generates answers (for `QueryResponse.scope`)."""
        return recipe_answers(self.recipe)

    def labels(self, case: BenchmarkCase) -> dict[str, str]:
        """Slice labels of a case, from its metadata."""
        return {k: str(case.metadata[k]) for k in self.slice_by if case.metadata.get(k) is not None}

    async def evaluate_case(
        self,
        kb: KnowledgeBaseLike,
        unit_id: str,
        case: BenchmarkCase,
        mode: str,
        answered: Measured | None = None,
    ) -> EvaluationCaseResult:
        """Query one case and score it; failures become the case's EvaluationError.

        `answered`: the case's response and latency, already retrieved (`query_in_batches`).
        """
        common = {
            "case_id": case.case_id,
            "unit_id": unit_id,
            "query_mode": mode,
            "query": case.query,
            "labels": self.labels(case),
            "expected": expected_for_report(case.expected),
        }
        depth = self.depth
        key = None
        if answered is None:
            key = self.cache.response_key(kb.manifest(), self.recipe, case.query, mode, depth)
            cached = self.cache.get_response(key) if key is not None else None
            if cached is not None:
                answered = self.from_cache(kb, mode, cached)
        if answered is not None:
            response, latency, batch_size = answered
        else:
            started = time.perf_counter()
            try:
                query_case = getattr(kb, "query_case", None)
                if query_case is not None:  # a knowledge base that answers cases by id
                    response = await query_case(case, unit_id=unit_id, mode=mode, top_k=depth)
                else:
                    response = await kb.query(case.query, mode=mode, top_k=depth)
            except Exception as exc:
                return EvaluationCaseResult(
                    **common,
                    latency_seconds=time.perf_counter() - started,
                    latency_batch_size=1,
                    error=error_record("query", exc),
                )
            latency, batch_size = time.perf_counter() - started, 1
            if key is not None:
                self.cache.put_response(key, response, latency)
        if self.ignore_identical_ids:
            response = without_identical_ids(response, case.case_id, self.top_k)
        if response.scope is None:  # a knowledge base may say what it held (a replay)
            counts = kb.manifest().counts
            scope = KnowledgeBaseScope(
                items=counts.get("chunks"), documents=counts.get("documents"), answers=self.answers
            )
            response = response.model_copy(update={"scope": scope})
        scores: list[EvaluationScore] = []
        error = None
        scoring_started = time.perf_counter()
        for evaluator in self.evaluators:
            try:
                score = await evaluator.evaluate(case, response)
                scores.append(checked_score(evaluator, score, self.evaluators))
            except Exception as exc:
                error = error or error_record("evaluate", exc, evaluator=evaluator.name)
        return EvaluationCaseResult(
            **common,
            scores=tuple(scores),
            retrieved=retrieved_items(response, self.key_layout),  # type: ignore[arg-type]
            answer=response.answer,
            latency_seconds=latency,
            latency_batch_size=batch_size,
            scoring_seconds=time.perf_counter() - scoring_started,
            error=error,
        )

    async def run(
        self,
        plan: UnitPlan,
        sources: Sequence[RawSource],
        kb_name: str,
        done: frozenset[CaseKey] = frozenset(),
        on_result: Callable[[EvaluationCaseResult], None] | None = None,
        progress: ProgressReporter = NO_PROGRESS,
    ) -> UnitOutcome:
        """Build the unit's KB and evaluate every (case, mode) not already in `done`.

        `progress` shows the build's stages and the queries (each query and its scoring)."""
        # Every cache of the unit's components (answers, verdicts, embeddings) under the
        # run's cache root, obeying runner.cache; here, so that worker processes and Ray
        # tasks, which run units through this method too, do the same.
        with run_cache(self.cache.root, self.cache.mode):
            return await self._run(plan, sources, kb_name, done, on_result, progress)

    async def _run(
        self,
        plan: UnitPlan,
        sources: Sequence[RawSource],
        kb_name: str,
        done: frozenset[CaseKey],
        on_result: Callable[[EvaluationCaseResult], None] | None,
        progress: ProgressReporter,
    ) -> UnitOutcome:
        unit_id = plan.unit.unit_id
        todo = [
            (case, mode)
            for mode in self.query_modes
            for case in plan.cases
            if (unit_id, case.case_id, mode) not in done
        ]
        before = CacheStats()
        before.add(self.cache.stats)
        try:
            with heap_frozen():
                create = self.cache.get_or_create if self.shards is None else self.shards.create
                kb = await create(
                    recipe=self.recipe,  # type: ignore[arg-type]
                    name=f"{kb_name}-{unit_id}",
                    store=self.store,
                    sources=sources,
                    progress=progress,
                )
        except Exception as exc:
            log.error("unit %s: knowledge base build failed: %s", unit_id, exc)
            failure = error_record("build", exc)
            results = [
                EvaluationCaseResult(
                    case_id=case.case_id,
                    unit_id=unit_id,
                    query_mode=mode,
                    query=case.query,
                    labels=self.labels(case),
                    expected=expected_for_report(case.expected),
                    error=failure,
                )
                for case, mode in todo
            ]
            for result in results:
                if on_result is not None:
                    on_result(result)
            return UnitOutcome(unit_id, None, results, self._delta(before))
        manifest = kb.manifest()
        log.info(
            "unit %s: %s %s chunks from %s documents in %.2fs",
            unit_id,
            "loaded" if manifest.cache_status == "hit" else "built",
            manifest.counts.get("chunks", "no"),
            manifest.counts.get("documents", "?"),
            manifest.load_seconds if manifest.cache_status == "hit" else manifest.build_seconds,
        )
        limiter = asyncio.Semaphore(self.max_concurrent_queries)

        async def bounded(
            case: BenchmarkCase, mode: str, answered: Measured | None
        ) -> EvaluationCaseResult:
            async with limiter:
                result = await self.evaluate_case(kb, unit_id, case, mode, answered)
            if on_result is not None:
                on_result(result)
            queries.advance()
            return result

        # Cases are retrieved together where the knowledge base gives each the same result
        # as alone (BM25: one vectorised call instead of a call per query), a bounded number
        # at a time (`query_batch_size`) so that their responses are not all held at once.
        batches = self.batches(kb)
        step = self.query_batch_size if batches else max(len(todo), 1)
        results: list[EvaluationCaseResult] = []
        try:
            with cyclic_gc_paused(), progress.stage("query+score", len(todo), "queries") as queries:
                for first in range(0, len(todo), step):
                    part = todo[first : first + step]
                    answered = await self.query_in_batches(kb, part) if batches else {}
                    results += await asyncio.gather(
                        *(bounded(c, m, answered.get((c.case_id, m))) for c, m in part)
                    )
        finally:
            closer = getattr(kb, "aclose", None)
            if closer is not None:
                await closer()
        return UnitOutcome(unit_id, manifest, results, self._delta(before))

    def _delta(self, before: CacheStats) -> CacheStats:
        delta = CacheStats()
        delta.add(self.cache.stats)
        delta.add(before, sign=-1)
        delta.discarded_reasons = delta.discarded_reasons[len(before.discarded_reasons) :]
        return delta


def run_unit_in_worker(
    evaluator: UnitEvaluator,
    plan: UnitPlan,
    sources: Sequence[RawSource],
    kb_name: str,
    done: frozenset[CaseKey],
) -> UnitOutcome:
    """Entry point of a worker process: evaluate one unit with its own event loop."""
    outcome = run_sync(evaluator.run(plan, sources, kb_name, done))
    for item in evaluator.evaluators:
        asyncio.run(item.aclose())
    return outcome
