"""BenchmarkRunner: prepare → documents → raw keys → run units → KBs → cases → report."""

from __future__ import annotations

import asyncio
import logging
import random
import time
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from heta_eval.evaluators.summary import summarize, summarize_slices
from heta_eval.kb import KnowledgeBase, KnowledgeRecipe, LocalObjectStore, ObjectStore, RawSource
from heta_eval.protocol import BenchmarkEvaluatorProtocol, BenchmarkProtocol
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkContents,
    BenchmarkDocument,
    BenchmarkRunUnit,
    BenchmarkWorkspace,
    EvaluationCaseResult,
    EvaluationError,
    EvaluationReport,
    EvaluationScore,
    KnowledgeBaseManifest,
    QueryResponse,
    RetrievedItem,
)
from heta_eval.runner_settings import RunnerSettings

log = logging.getLogger(__name__)


class BenchmarkError(ValueError):
    """The benchmark yielded something the runner cannot evaluate (nothing, or bad ids)."""


@dataclass(frozen=True)
class _UnitPlan:
    unit: BenchmarkRunUnit
    documents: tuple[BenchmarkDocument, ...]
    cases: tuple[BenchmarkCase, ...]


def _error(stage: str, exc: BaseException, evaluator: str | None = None) -> EvaluationError:
    return EvaluationError(
        stage=stage,  # type: ignore[arg-type]
        error_type=type(exc).__name__,
        message=str(exc)[:2000],
        evaluator=evaluator,
    )


def _retrieved(response: QueryResponse) -> tuple[RetrievedItem, ...]:
    return tuple(
        RetrievedItem(
            id=r.id,
            score=r.score,
            document_id=r.source.document_id,
            chunk_id=r.source.chunk_id,
            source_key=r.source.source_key,
            page_index=r.source.page_index,
        )
        for r in response.results
    )


def _document_bytes(document: BenchmarkDocument, offline: bool) -> bytes:
    if document.data is not None:
        return document.data
    if document.path is not None:
        return Path(document.path).read_bytes()
    assert document.source_uri is not None
    if offline and not document.source_uri.startswith("file:"):
        raise ConnectionRefusedError(f"offline run: not fetching {document.source_uri}")
    with urllib.request.urlopen(document.source_uri, timeout=60) as handle:
        return handle.read()


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


def check_run_arguments(
    recipe: KnowledgeRecipe,
    evaluators: Sequence[BenchmarkEvaluatorProtocol],
    settings: RunnerSettings,
) -> tuple[str, ...]:
    """Check that evaluators and query modes fit together; return the modes to evaluate."""
    names = [e.name for e in evaluators]
    if not names:
        raise BenchmarkError("no evaluators: the benchmark declares none and none were given")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise BenchmarkError(f"evaluator metrics listed twice: {duplicates}")
    modes = settings.query_modes or recipe.query_modes
    unknown = [m for m in modes if m not in recipe.query_modes]
    if unknown:
        raise BenchmarkError(
            f"runner.query_modes: {unknown} are not offered by recipe {recipe.name!r}; "
            f"allowed: {list(recipe.query_modes)}"
        )
    return tuple(modes)


class BenchmarkRunner:
    """Evaluates one recipe on one benchmark and produces one EvaluationReport.

    It orchestrates only: the benchmark supplies data and scoring policy (evaluators), the
    recipe builds knowledge bases. A case that fails to query or score is recorded with an
    EvaluationError; a unit whose build fails records that error on each of its cases.
    """

    def __init__(
        self,
        *,
        benchmark: BenchmarkProtocol,
        recipe: KnowledgeRecipe,
        evaluators: Sequence[BenchmarkEvaluatorProtocol],
        settings: RunnerSettings,
        store: ObjectStore | None = None,
    ) -> None:
        self.benchmark = benchmark
        self.recipe = recipe
        self.evaluators = tuple(evaluators)
        self.settings = settings
        self.store = store if store is not None else LocalObjectStore(settings.store_dir)
        self.query_modes = check_run_arguments(recipe, self.evaluators, settings)
        # How deep to retrieve is the benchmark's scoring policy unless the runner says.
        self.top_k: int = settings.top_k or int(getattr(benchmark, "default_top_k", 10))
        self.slice_by: tuple[str, ...] = tuple(getattr(benchmark, "slice_by", ()))

    async def load(self) -> BenchmarkContents:
        """Prepare the benchmark and check its documents, cases and units as a whole."""
        workspace = BenchmarkWorkspace(
            root=self.settings.workspace_dir, offline=self.settings.offline
        )
        prepared = await self.benchmark.prepare(workspace)
        documents = [d async for d in self.benchmark.documents(prepared)]
        cases = [c async for c in self.benchmark.cases(prepared)]
        units = [u async for u in self.benchmark.run_units(prepared)]
        try:
            return BenchmarkContents(
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

    def _plan(self, contents: BenchmarkContents) -> list[_UnitPlan]:
        """Units with their documents and cases, after `limit` (see `select_cases`)."""
        per_unit = [(unit, contents.unit_cases(unit)) for unit in contents.units]
        if self.settings.limit is not None:
            chosen = select_cases(per_unit, self.settings.limit, self.settings.seed)
            per_unit = [
                (u, tuple(c for c in cases if c.case_id in chosen)) for u, cases in per_unit
            ]
        return [
            _UnitPlan(unit, contents.unit_documents(unit), cases)
            for unit, cases in per_unit
            if cases
        ]

    def _write_documents(
        self, contents: BenchmarkContents, plans: Sequence[_UnitPlan]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """Write the planned units' documents under their raw keys; return keys and errors."""
        keys: dict[str, str] = {}
        errors: dict[str, str] = {}
        for plan in plans:
            for document in plan.documents:
                if document.document_id in keys or document.document_id in errors:
                    continue
                key = document.raw_key(contents.manifest)
                try:
                    self.store.put(key, _document_bytes(document, self.settings.offline))
                except Exception as exc:
                    errors[document.document_id] = f"{type(exc).__name__}: {exc}"
                    log.warning("document %s could not be stored: %s", document.document_id, exc)
                    continue
                keys[document.document_id] = key
        return keys, errors

    def _labels(self, case: BenchmarkCase) -> dict[str, str]:
        return {k: str(case.metadata[k]) for k in self.slice_by if case.metadata.get(k) is not None}

    async def _evaluate_case(
        self, kb: KnowledgeBase, unit_id: str, case: BenchmarkCase, mode: str
    ) -> EvaluationCaseResult:
        started = time.perf_counter()
        try:
            response = await kb.query(case.query, mode=mode, top_k=self.top_k)
        except Exception as exc:
            return EvaluationCaseResult(
                case_id=case.case_id,
                unit_id=unit_id,
                query_mode=mode,
                query=case.query,
                labels=self._labels(case),
                latency_seconds=time.perf_counter() - started,
                error=_error("query", exc),
            )
        latency = time.perf_counter() - started
        scores: list[EvaluationScore] = []
        error = None
        scoring_started = time.perf_counter()
        for evaluator in self.evaluators:
            try:
                scores.append(await evaluator.evaluate(case, response))
            except Exception as exc:
                error = error or _error("evaluate", exc, evaluator=evaluator.name)
        scoring = time.perf_counter() - scoring_started
        return EvaluationCaseResult(
            case_id=case.case_id,
            unit_id=unit_id,
            query_mode=mode,
            query=case.query,
            labels=self._labels(case),
            scores=tuple(scores),
            retrieved=_retrieved(response),
            answer=response.answer,
            latency_seconds=latency,
            scoring_seconds=scoring,
            error=error,
        )

    async def _run_unit(
        self, plan: _UnitPlan, keys: dict[str, str], kb_name: str
    ) -> tuple[KnowledgeBaseManifest | None, list[EvaluationCaseResult]]:
        unit_id = plan.unit.unit_id
        sources = [
            RawSource(
                key=keys[d.document_id],
                document_id=d.document_id,
                media_type=d.media_type,
                metadata=d.metadata,
            )
            for d in plan.documents
            if d.document_id in keys
        ]
        try:
            kb = await KnowledgeBase.create(
                recipe=self.recipe, name=f"{kb_name}-{unit_id}", store=self.store, sources=sources
            )
        except Exception as exc:
            log.error("unit %s: knowledge base build failed: %s", unit_id, exc)
            failure = _error("build", exc)
            return None, [
                EvaluationCaseResult(
                    case_id=c.case_id,
                    unit_id=unit_id,
                    query_mode=m,
                    query=c.query,
                    labels=self._labels(c),
                    error=failure,
                )
                for m in self.query_modes
                for c in plan.cases
            ]
        manifest = kb.manifest()
        log.info(
            "unit %s: built %d chunks from %d documents in %.2fs",
            unit_id,
            manifest.counts["chunks"],
            manifest.counts["documents"],
            manifest.build_seconds,
        )
        limiter = asyncio.Semaphore(self.settings.max_concurrent_queries)

        async def bounded(case: BenchmarkCase, mode: str) -> EvaluationCaseResult:
            async with limiter:
                return await self._evaluate_case(kb, unit_id, case, mode)

        results = await asyncio.gather(
            *(bounded(c, m) for m in self.query_modes for c in plan.cases)
        )
        return manifest, list(results)

    async def run(self) -> EvaluationReport:
        """Load the benchmark, evaluate the recipe and write `report.json` to the output dir."""
        return await self.evaluate(await self.load())

    async def evaluate(self, contents: BenchmarkContents) -> EvaluationReport:
        """Build, query and score what `load()` returned; write `report.json`."""
        started_at = datetime.now(UTC)
        manifest = contents.manifest
        plans = self._plan(contents)
        log.info(
            "benchmark %s: %d documents, %d cases, %d run units (%d planned)",
            manifest.key,
            len(contents.documents),
            len(contents.cases),
            len(contents.units),
            len(plans),
        )
        clock = time.perf_counter()
        keys, document_errors = self._write_documents(contents, plans)
        write_seconds = time.perf_counter() - clock
        kb_name = f"{manifest.name}-{self.recipe.name}"
        kb_manifests: list[KnowledgeBaseManifest] = []
        results: list[EvaluationCaseResult] = []
        unit_rows = []
        for plan in plans:
            kb_manifest, unit_results = await self._run_unit(plan, keys, kb_name)
            if kb_manifest is not None:
                kb_manifests.append(kb_manifest)
            results.extend(unit_results)
            unit_rows.append(
                {
                    "unit_id": plan.unit.unit_id,
                    "documents": len(plan.documents),
                    "cases": len(plan.cases),
                    "build_seconds": kb_manifest.build_seconds if kb_manifest else None,
                    "build_failed": kb_manifest is None,
                }
            )
        for evaluator in self.evaluators:
            # Evaluators holding connections (an LLM judge) release them with this run's loop.
            closer = getattr(evaluator, "aclose", None)
            if closer is not None:
                await closer()
        evaluate_seconds = time.perf_counter() - clock - write_seconds
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
            metadata={
                "run_units": unit_rows,
                "document_keys": keys,
                "document_errors": document_errors,
                "evaluators": metric_names,
                "top_k": self.top_k,
                "limit": self.settings.limit,
                "seed": self.settings.seed,
                "timings_seconds": {
                    "write_documents": write_seconds,
                    "build": sum(m.build_seconds for m in kb_manifests),
                    "query": sum(r.latency_seconds or 0.0 for r in results),
                    "score": sum(r.scoring_seconds or 0.0 for r in results),
                    "build_query_score": evaluate_seconds,
                },
                "cases": {
                    "total": len(contents.cases),
                    "evaluated": sum(len(p.cases) for p in plans),
                    "failed": sum(1 for r in results if r.error is not None),
                },
            },
        )
        report.write_json(self.settings.output_dir / "report.json")
        return report
