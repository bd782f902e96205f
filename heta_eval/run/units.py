"""Run units: which ones a run evaluates (`plan_units`, after `limit`), one unit's evaluation
(build or load its knowledge base, then query and score its cases, `UnitEvaluator`), and
units in worker processes (`run_units_in_processes`)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import random
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context

from heta_eval.async_run import run_sync
from heta_eval.json_cache import run_cache
from heta_eval.kb import RawSource
from heta_eval.kb.build_cache import CacheStats
from heta_eval.progress import NO_PROGRESS, ProgressReporter
from heta_eval.protocols import KnowledgeBaseLike, missing_members
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkContents,
    BenchmarkDocument,
    BenchmarkRunUnit,
    EvaluationCaseResult,
    KnowledgeBaseManifest,
)
from heta_eval.records.evaluation import expected_for_report
from heta_eval.records.run import UnitFacts
from heta_eval.run.cases import CaseScorer, Measured, error_record
from heta_eval.run.journal import CaseKey
from heta_eval.run.parent_watch import abandon, die_with_run

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UnitPlan:
    """A run unit with its documents and the cases to evaluate (after `limit`)."""

    unit: BenchmarkRunUnit
    documents: tuple[BenchmarkDocument, ...]
    cases: tuple[BenchmarkCase, ...]

    def kept_manifest(
        self, manifest: KnowledgeBaseManifest, keys: Mapping[str, tuple[str, str]]
    ) -> KnowledgeBaseManifest:
        """The unit's knowledge base manifest as the report keeps it: without its source keys
        when they are those of the unit's stored documents (`keys`: each document's raw key
        and sha256), in order (`sources_listed=False`; the report's document key layout
        gives each), else as it is."""
        if not manifest.sources_listed:
            return manifest
        stored = tuple(keys[d.document_id][0] for d in self.documents if d.document_id in keys)
        if manifest.source_keys != stored:
            return manifest
        return manifest.model_copy(update={"source_keys": (), "sources_listed": False})


@dataclass
class UnitOutcome:
    """What evaluating a unit produced: its KB manifest (None when not built) and results."""

    unit_id: str
    manifest: KnowledgeBaseManifest | None
    results: list[EvaluationCaseResult]
    cache: CacheStats = field(default_factory=CacheStats)


def select_cases(
    per_unit: Sequence[tuple[BenchmarkRunUnit, tuple[BenchmarkCase, ...]]], limit: int, seed: int
) -> set[str]:
    """A deterministic, seeded subset of `limit` case ids, stratified by unit.

    Units take turns in a seeded order, each giving its next case from a seeded shuffle, so
    a smoke run of a many-units benchmark touches as many units as it can; with one unit it
    is a seeded random sample. The same (cases, limit, seed) always gives the same subset.
    """
    rng = random.Random(seed)
    queues = []
    for _, cases in per_unit:
        ids = [c.case_id for c in cases]
        rng.shuffle(ids)
        queues.append(ids)
    rng.shuffle(queues)
    chosen: set[str] = set()
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.add(queue.pop())
    return chosen


def plan_units(contents: BenchmarkContents, limit: int | None, seed: int) -> list[UnitPlan]:
    """Units with their documents and cases, after `limit` (see `select_cases`); a unit
    left without cases is not planned."""
    per_unit = [(unit, contents.unit_cases(unit)) for unit in contents.units]
    if limit is not None:
        chosen = select_cases(per_unit, limit, seed)
        per_unit = [(u, tuple(c for c in cases if c.case_id in chosen)) for u, cases in per_unit]
    return [
        UnitPlan(unit, contents.unit_documents(unit), cases) for unit, cases in per_unit if cases
    ]


def gather_units(
    plans: Sequence[UnitPlan],
    query_modes: Sequence[str],
    results: Mapping[CaseKey, EvaluationCaseResult],
    manifests: Mapping[str, KnowledgeBaseManifest],
    keys: Mapping[str, tuple[str, str]],
) -> tuple[list[EvaluationCaseResult], list[KnowledgeBaseManifest], list[UnitFacts]]:
    """The planned units' case results in plan order (by query mode, then case), the
    manifests of their knowledge bases as the report keeps them and each unit's facts, from
    every case's result and every built unit's manifest (`keys`: the stored documents')."""
    gathered: list[EvaluationCaseResult] = []
    kept: list[KnowledgeBaseManifest] = []
    facts = []
    for plan in plans:
        unit_id = plan.unit.unit_id
        gathered += [results[unit_id, c.case_id, m] for m in query_modes for c in plan.cases]
        manifest = manifests.get(unit_id)
        if manifest is not None:
            kept.append(plan.kept_manifest(manifest, keys))
        facts.append(
            UnitFacts(
                unit_id=unit_id,
                documents=len(plan.documents),
                cases=len(plan.cases),
                build_seconds=manifest.build_seconds if manifest else None,
                build_failed=manifest is None,
            )
        )
    return gathered, kept, facts


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


@dataclass
class UnitEvaluator(CaseScorer):
    """Everything needed to evaluate units, in a form that can be sent to a worker process:
    builds (or loads) a unit's knowledge base, then queries and scores its cases."""

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
                create: Callable[..., Awaitable[KnowledgeBaseLike]] = (
                    self.cache.get_or_create if self.shards is None else self.shards.create
                )
                kb = await create(
                    recipe=self.recipe,
                    name=f"{kb_name}-{unit_id}",
                    store=self.store,
                    sources=sources,
                    progress=progress,
                )
            missing = missing_members(kb, KnowledgeBaseLike)
            if missing:
                raise TypeError(
                    f"recipe {self.recipe.name!r} built a {type(kb).__qualname__}, which lacks "
                    f"{missing} of the knowledge base protocol (heta_eval.protocols."
                    "KnowledgeBaseLike; subclass BaseKnowledgeBase for the defaults)"
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
            await kb.aclose()
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


async def run_units_in_processes(
    evaluator: UnitEvaluator,
    jobs: Sequence[tuple[UnitPlan, Sequence[RawSource]]],
    kb_name: str,
    done: frozenset[CaseKey],
    workers: int,
    on_outcome: Callable[[UnitOutcome], None],
) -> list[UnitOutcome]:
    """Evaluate every (plan, sources) in a bounded pool of `workers` processes (CPU-bound
    builds and BM25 scoring); `on_outcome` is called here as each one finishes. Returns the
    outcomes in completion order."""
    loop = asyncio.get_running_loop()
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("forkserver"),
        initializer=die_with_run,  # a killed run leaves no worker behind
        initargs=(os.getpid(),),
    )
    futures: list[asyncio.Future[UnitOutcome]] = []
    try:
        futures = [
            loop.run_in_executor(pool, run_unit_in_worker, evaluator, plan, sources, kb_name, done)
            for plan, sources in jobs
        ]
        outcomes = []
        for future in asyncio.as_completed(futures):
            outcome = await future
            on_outcome(outcome)
            outcomes.append(outcome)
    except BaseException:
        # Stopped (Ctrl-C, SIGTERM) or failed: units still running are abandoned, not
        # waited for; what finished is in the journal. Their futures are cancelled (and any
        # error they already hold taken), so asyncio reports none as never retrieved.
        for future in futures:
            if future.done() and not future.cancelled():
                future.exception()
            future.cancel()
        abandon(pool)
        raise
    pool.shutdown()
    return outcomes
