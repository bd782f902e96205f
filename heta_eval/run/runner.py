"""BenchmarkRunner: prepare → documents → raw keys → run units → KBs → cases → report.

The runner evaluates; the lifecycle (`heta_eval.run.lifecycle`) decides whether to, and
writes, tracks and keeps what it produced.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import ChainMap
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from pydantic import ValidationError

from heta_eval.benchmarks.url_guard import private_hosts
from heta_eval.evaluators.summary import summarize, summarize_slices
from heta_eval.kb import LocalObjectStore, ObjectStore
from heta_eval.kb.build_cache import BuildCache
from heta_eval.progress import ProgressReporter, StageHandle, use
from heta_eval.protocols import BenchmarkEvaluatorProtocol, BenchmarkProtocol, RecipeLike
from heta_eval.records import (
    BenchmarkContents,
    BenchmarkWorkspace,
    EvaluationReport,
)
from heta_eval.records.run import (
    CaseCounts,
    RunFacts,
    RunIdentity,
    StoredDocumentKeys,
    TrackingRef,
)
from heta_eval.run.documents import DocumentKeys, DocumentStorage, document_count, unit_sources
from heta_eval.run.failures import fail_cases_with_lost_evidence
from heta_eval.run.identity import DataDigest
from heta_eval.run.journal import CaseJournal, CaseKey, case_key
from heta_eval.run.ray_units import run_units_on_ray
from heta_eval.run.settings import RunnerSettings, resolve_top_k
from heta_eval.run.shards import ShardPlan, check_shard_settings, ray_for_shards, sharded
from heta_eval.run.units import (
    UnitEvaluator,
    UnitOutcome,
    UnitPlan,
    cyclic_gc_paused,
    gather_units,
    plan_units,
    run_units_in_processes,
)

log = logging.getLogger(__name__)


class BenchmarkError(ValueError):
    """The benchmark yielded something the runner cannot evaluate (nothing, or bad ids)."""


@dataclass(frozen=True)
class LoadedBenchmark:
    """What `BenchmarkRunner.load` read: the contents, each document's sha256 (None when its
    bytes could not be read, or are fetched from a URI later) and the digest of it all."""

    contents: BenchmarkContents
    data_digest: str
    document_sha256: dict[str, str | None] = field(default_factory=dict)


def check_run_arguments(
    recipe: RecipeLike,
    evaluators: Sequence[BenchmarkEvaluatorProtocol],
    settings: RunnerSettings,
) -> tuple[str, ...]:
    """Check that evaluators and query modes fit together; return the modes to evaluate."""
    names = [e.name for e in evaluators]
    if not names:
        raise BenchmarkError(
            "no evaluators: evaluator.use_benchmark_defaults is false (or the benchmark "
            "declares none) and evaluator.extra adds none"
        )
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise BenchmarkError(f"evaluator metrics listed twice: {duplicates}")
    modes = settings.query_modes or recipe.query_modes
    key = "runner.query_modes" if settings.query_modes else "recipe.query_modes"
    repeated = sorted({m for m in modes if list(modes).count(m) > 1})
    if repeated:
        # Each case would be scored once per listing: n doubled in every CI and paired test.
        raise BenchmarkError(
            f"{key}: {repeated} listed more than once ({list(modes)}); list each query mode once"
        )
    unknown = [m for m in modes if m not in recipe.query_modes]
    if unknown:
        raise BenchmarkError(
            f"runner.query_modes: {unknown} are not offered by recipe {recipe.name!r}; "
            f"allowed (recipe.query_modes): {list(recipe.query_modes)}"
        )
    return tuple(modes)


def check_evidence_documents(contents: BenchmarkContents, *, strict: bool) -> None:
    """Warn (or with `strict`, fail) when cases' evidence names documents that do not exist."""
    unknown = contents.unknown_evidence_documents()
    if not unknown:
        return
    documents = sorted({d for ids in unknown.values() for d in ids})
    examples = ", ".join(f"{case} -> {ids[0]}" for case, ids in list(unknown.items())[:3])
    message = (
        f"benchmark {contents.manifest.name!r}: {len(unknown)} of {len(contents.cases)} cases "
        f"have evidence naming {len(documents)} document_id(s) the benchmark does not have "
        f"(e.g. {examples}); that evidence can never be retrieved"
    )
    if strict:
        raise BenchmarkError(f"{message} (runner.strict=true)")
    log.warning("%s; set runner.strict=true to make this an error", message)


class BenchmarkRunner:
    """Evaluates one recipe on one benchmark and produces one EvaluationReport.

    It orchestrates only: the benchmark supplies data and scoring policy (evaluators), the
    recipe builds knowledge bases (through the build cache). A case that fails to query or
    score is recorded with an EvaluationError; a unit whose build fails records that error
    on each of its cases. With a `journal`, every finished result is appended as it
    completes and a rerun evaluates only what is missing. With `settings.workers > 1`,
    units are evaluated in parallel worker processes, with the same results.
    """

    def __init__(
        self,
        *,
        benchmark: BenchmarkProtocol,
        recipe: RecipeLike,
        evaluators: Sequence[BenchmarkEvaluatorProtocol],
        settings: RunnerSettings,
        store: ObjectStore | None = None,
        journal: CaseJournal | None = None,
        build_cache: BuildCache | None = None,
        progress: ProgressReporter | None = None,
    ) -> None:
        self.benchmark = benchmark
        self.recipe = recipe
        self.evaluators = tuple(evaluators)
        self.settings = settings
        self.store = store if store is not None else LocalObjectStore(settings.store_dir)
        self.journal = journal
        self.build_cache = build_cache or BuildCache(settings.cache_dir, settings.cache)
        self.progress = progress or ProgressReporter(settings.progress)
        self.query_modes = check_run_arguments(recipe, self.evaluators, settings)
        check_shard_settings(settings, recipe)
        self.top_k = resolve_top_k(settings, benchmark)

    def unit_evaluator(self, document_keys: StoredDocumentKeys | None = None) -> UnitEvaluator:
        """The picklable part of this runner that evaluates single units; with the run's
        `document_keys`, its case results leave out the retrieved keys their layout gives."""
        layout = None
        if document_keys is not None and document_keys.name_suffix is not None:
            layout = (document_keys.prefix, document_keys.name_suffix)
        return UnitEvaluator(
            recipe=self.recipe,
            evaluators=self.evaluators,
            query_modes=tuple(self.query_modes),
            top_k=self.top_k,
            max_concurrent_queries=self.settings.max_concurrent_queries,
            slice_by=tuple(self.benchmark.slice_by),
            store=self.store,
            cache=self.build_cache,
            ignore_identical_ids=bool(self.benchmark.ignore_identical_ids),
            shards=ShardPlan.of(self.settings),
            query_batch_size=self.settings.query_batch_size,
            key_layout=layout,
        )

    async def load(self) -> LoadedBenchmark:
        """Prepare the benchmark and check its documents, cases and units as a whole; digest
        their content as they are read (the data part of the run's identity)."""
        workspace = BenchmarkWorkspace(
            root=self.settings.workspace_dir, offline=self.settings.offline
        )
        with use(self.progress):  # downloads in prepare() report through it
            prepared = await self.benchmark.prepare(workspace)
        digest = DataDigest(self.benchmark.manifest)
        # Every record read is kept: the collector's passes over the growing heap would find
        # nothing to free (200k documents: 6 s of passes beside 5 s of reading them).
        with cyclic_gc_paused():
            documents = [digest.document(d) async for d in self.benchmark.documents(prepared)]
            cases = [digest.case(c) async for c in self.benchmark.cases(prepared)]
            units = [digest.unit(u) async for u in self.benchmark.run_units(prepared)]
            try:
                contents = BenchmarkContents(
                    manifest=self.benchmark.manifest,
                    documents=tuple(documents),
                    cases=tuple(cases),
                    units=tuple(units),
                )
            except ValidationError as exc:
                problems = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
                raise BenchmarkError(
                    f"benchmark {self.benchmark.manifest.name!r} cannot be evaluated: {problems}"
                ) from None
        self.check_loaded(contents)
        return LoadedBenchmark(contents, digest.hexdigest(), digest.document_sha256)

    def check_loaded(self, contents: BenchmarkContents) -> None:
        """This run's checks of loaded contents: evidence naming documents the benchmark
        does not have (an error with `runner.strict`), and the recipe's own (a replay)."""
        check_evidence_documents(contents, strict=self.settings.strict)
        try:  # a replay checks its files' ids against the cases
            self.recipe.check_contents(contents)
        except ValueError as exc:
            raise BenchmarkError(str(exc)) from None

    async def _run_units(
        self,
        plans: Sequence[UnitPlan],
        keys: DocumentKeys,
        kb_name: str,
        done: frozenset[CaseKey],
        units: StageHandle,
        written: ObjectStore | None = None,
        document_keys: StoredDocumentKeys | None = None,
    ) -> list[UnitOutcome]:
        evaluator = self.unit_evaluator(document_keys)
        journal = self.journal
        by_unit = {plan.unit.unit_id: plan for plan in plans}

        def collect(outcome: UnitOutcome) -> None:
            """A Ray task's outcome, in the driver as it arrives."""
            if journal is not None:
                journal.record_cases(outcome.results)
            self._record_unit(outcome, by_unit[outcome.unit_id], keys)
            self.build_cache.stats.add(outcome.cache)
            units.advance()

        if sharded(self.settings):
            # The shards are the workers (Ray actors): units one after another, driven here.
            if self.settings.executor == "ray":
                written = None  # the actors read the documents from the store
            with ray_for_shards(self.settings):
                return await self._run_units_here(
                    plans, keys, kb_name, done, units, written, document_keys
                )
        jobs = [(plan, unit_sources(plan, keys)) for plan in plans]
        if self.settings.executor == "ray":
            return await run_units_on_ray(evaluator, jobs, kb_name, done, self.settings, collect)
        if self.settings.workers <= 1 or len(plans) <= 1:
            return await self._run_units_here(
                plans, keys, kb_name, done, units, written, document_keys
            )
        workers = self.settings.workers
        return await run_units_in_processes(evaluator, jobs, kb_name, done, workers, collect)

    async def _run_units_here(
        self,
        plans: Sequence[UnitPlan],
        keys: DocumentKeys,
        kb_name: str,
        done: frozenset[CaseKey],
        units: StageHandle,
        written: ObjectStore | None,
        document_keys: StoredDocumentKeys | None = None,
    ) -> list[UnitOutcome]:
        """Evaluate the units one after another in this process."""
        evaluator = self.unit_evaluator(document_keys)
        journal = self.journal
        if written is not None:  # in this process: builds read the bytes in memory
            evaluator = replace(evaluator, store=written)
        outcomes = []
        for plan in plans:
            outcome = await evaluator.run(
                plan,
                unit_sources(plan, keys),
                kb_name,
                done,
                on_result=(lambda r: journal.record_cases([r])) if journal else None,
                progress=self.progress.scoped(plan.unit.unit_id, transient=len(plans) > 1),
            )
            self._record_unit(outcome, plan, keys)
            outcomes.append(outcome)
            units.advance()
        return outcomes

    def _record_unit(self, outcome: UnitOutcome, plan: UnitPlan, keys: DocumentKeys) -> None:
        """A unit's manifest as the report keeps it (without the source keys the run's key
        layout gives, `UnitPlan.kept_manifest`), in its outcome and the journal."""
        if outcome.manifest is None:
            return
        outcome.manifest = plan.kept_manifest(outcome.manifest, keys)
        if self.journal is not None:
            self.journal.record_unit(outcome.unit_id, outcome.manifest)

    async def run(self) -> EvaluationReport:
        """Load the benchmark and evaluate the recipe (nothing is written but the documents to
        the object store and the journal; `heta_eval.evaluate` writes and tracks reports)."""
        return await self.evaluate(await self.load())

    async def evaluate(
        self,
        loaded: LoadedBenchmark,
        *,
        identity: RunIdentity | None = None,
        tracking: TrackingRef | None = None,
    ) -> EvaluationReport:
        """Build, query and score what `load()` returned, into a report."""
        started_at = datetime.now(UTC)
        contents = loaded.contents
        manifest = contents.manifest
        plans = plan_units(contents, self.settings.limit, self.settings.seed)
        log.info(
            "benchmark %s: %d documents, %d cases, %d run units (%d planned)",
            manifest.key,
            len(contents.documents),
            len(contents.cases),
            len(contents.units),
            len(plans),
        )
        journaled, journaled_units = self.journal.read() if self.journal else ({}, {})
        if journaled:
            log.info("resuming: %d case results already in the journal", len(journaled))
        clock = time.perf_counter()
        private_urls = private_hosts(self.benchmark.allow_private_urls)
        storage = DocumentStorage(self.store, self.settings, private_urls)
        writer = storage.background_writer(plans)
        try:
            with (
                self.progress.stage("documents", document_count(plans), "documents") as stage,
                cyclic_gc_paused(),  # a key for each document, kept: nothing to collect
            ):
                keys, document_errors = storage.write(
                    contents, loaded.document_sha256, plans, writer
                )
                stage.advance(len(keys) + len(document_errors))
                # The layout of the stored documents' keys: case results leave out the
                # retrieved keys it gives, the report keeps it.
                document_keys = StoredDocumentKeys.of(
                    manifest.raw_key_prefix, {doc: key for doc, (key, _) in keys.items()}
                )
            write_seconds = time.perf_counter() - clock
            kb_name = f"{manifest.name}-{self.recipe.name}"
            with self.progress.stage("units", len(plans), "units") as units:
                outcomes = await self._run_units(
                    plans,
                    keys,
                    kb_name,
                    frozenset(journaled),
                    units,
                    written=storage.written_store(contents, keys),
                    document_keys=document_keys,
                )
            for evaluator in self.evaluators:
                # Evaluators holding connections (an LLM judge) release them with this run's
                # loop.
                await evaluator.aclose()
            evaluate_seconds = time.perf_counter() - clock - write_seconds
            background_seconds = None
            if writer is not None:
                waited = time.perf_counter()
                _, background_seconds = writer.finish()
                write_seconds += time.perf_counter() - waited
        finally:
            if writer is not None:
                writer.close()

        fresh = {case_key(r): r for o in outcomes for r in o.results}
        built = {o.unit_id: o.manifest for o in outcomes if o.manifest is not None}
        results, kb_manifests, unit_rows = gather_units(
            plans, self.query_modes, ChainMap(fresh, journaled), {**journaled_units, **built}, keys
        )
        results = fail_cases_with_lost_evidence(results, document_errors)
        metric_names = [e.name for e in self.evaluators]
        summary, details = summarize(
            results,
            self.query_modes,
            metric_names,
            resamples=self.settings.bootstrap_resamples,
            confidence=self.settings.confidence,
            seed=self.settings.seed,
        )
        report = EvaluationReport(
            report_id=uuid.uuid4().hex,
            benchmark=manifest,
            knowledge_base_name=kb_name,
            knowledge_base_manifests=tuple(kb_manifests),
            recipe_manifest=self.recipe.manifest(),
            query_modes=tuple(self.query_modes),
            score_summary=summary,
            score_details=details,
            score_slices=summarize_slices(results, self.query_modes, metric_names),
            case_results=tuple(results),
            started_at=started_at,
            finished_at=datetime.now(UTC),
            run=RunFacts(
                identity=identity,
                evaluators=tuple(metric_names),
                top_k=self.top_k,
                limit=self.settings.limit,
                seed=self.settings.seed,
                workers=self.settings.workers,
                run_units=tuple(unit_rows),
                document_keys=document_keys,
                document_errors=document_errors,
                cache=self.build_cache.stats.as_dict() | {"mode": self.build_cache.mode},
                resumed_cases=len(journaled),
                retried_cases=self.journal.retried if self.journal else 0,
                timings_seconds={
                    # On the critical path; with a writer process, the time spent queuing
                    # the bytes and waiting for it at the end.
                    "write_documents": write_seconds,
                    **(
                        {"write_documents_in_background": background_seconds}
                        if background_seconds is not None
                        else {}
                    ),
                    "build": sum(m.build_seconds for m in built.values()),
                    "query": sum(r.latency_seconds or 0.0 for r in fresh.values()),
                    "score": sum(r.scoring_seconds or 0.0 for r in fresh.values()),
                    "build_query_score": evaluate_seconds,
                },
                cases=CaseCounts(
                    total=len(contents.cases),
                    evaluated=sum(len(p.cases) for p in plans),
                    failed=sum(1 for r in results if r.error is not None),
                    scored=sum(1 for r in results if r.error is None),
                ),
                output_dir=str(self.settings.output_dir),
                tracking=tracking or TrackingRef(),
            ),
        )
        if self.journal is not None:
            self.journal.close()
        return report
