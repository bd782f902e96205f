"""One case of a run unit: retrieve its response (alone, in a batch, or from the response
cache), score it with every evaluator and record the result, failures included.

What an evaluator returns is checked where it crosses into the run: `evaluate` must return
one `EvaluationScore`; anything else (a list of them, a bare number, a dict) fails that case
with a message that names the evaluator, what it returned and what it must return, instead
of ending the run deep inside pydantic. The score must carry the name the evaluator declares
(`name`): a score named like another evaluator's metric would give a case two values of one
metric, which the report and a comparison would read differently; such a case fails, naming
both evaluators.
"""

from __future__ import annotations

import functools
import logging
import reprlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from heta_eval.kb import ObjectStore
from heta_eval.kb.build_cache import BuildCache, CachedResponse
from heta_eval.protocols import BenchmarkEvaluatorProtocol, KnowledgeBaseLike, RecipeLike
from heta_eval.records import (
    BenchmarkCase,
    EvaluationCaseResult,
    EvaluationError,
    EvaluationScore,
    KnowledgeBaseScope,
    QueryResponse,
)
from heta_eval.records.evaluation import expected_for_report
from heta_eval.run.settings import QUERY_BATCH_SIZE
from heta_eval.run.shards import ShardPlan

log = logging.getLogger(__name__)

_SHORT = reprlib.Repr()
_SHORT.maxstring = 60
_SHORT.maxother = 60

KeyLayout = tuple[str, str]
"""(prefix, name_suffix) of the run's document keys: `{prefix}{id}/{id}{name_suffix}`."""

Stage = Literal["build", "query", "evaluate"]
"""Where a case failed (`EvaluationError.stage`)."""


class ComponentReturnError(TypeError):
    """A component returned something of the wrong type."""


def describe(value: Any) -> str:
    """`a list of 2 EvaluationScore`, `a float (0.5)`, `None`: what a component returned."""
    if value is None:
        return "None"
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    if isinstance(value, list | tuple | set | frozenset):
        kinds = sorted({type(v).__name__ for v in value})
        inner = f" of {len(value)} {'/'.join(kinds)}" if value else " (empty)"
        return f"{article} {kind}{inner}"
    return f"{article} {kind} ({_SHORT.repr(value)})"


def _named(evaluator: BenchmarkEvaluatorProtocol) -> str:
    cls = type(evaluator)
    return f"evaluator {evaluator.name!r} ({cls.__module__}.{cls.__qualname__})"


def checked_score(
    evaluator: BenchmarkEvaluatorProtocol,
    value: Any,
    evaluators: Sequence[BenchmarkEvaluatorProtocol] = (),
) -> EvaluationScore:
    """`value` if it is one EvaluationScore named as `evaluator` declares, else
    `ComponentReturnError` saying so (naming the one of `evaluators` whose name it took)."""
    if not isinstance(value, EvaluationScore):
        raise ComponentReturnError(
            f"{_named(evaluator)} returned {describe(value)}; evaluate() must "
            "return one heta_eval.records.EvaluationScore"
        )
    if value.name == evaluator.name:
        return value
    owner = next((e for e in evaluators if e is not evaluator and e.name == value.name), None)
    clash = f", the name of {_named(owner)}" if owner is not None else ""
    raise ComponentReturnError(
        f"{_named(evaluator)} returned a score named {value.name!r}{clash}; an evaluator may "
        f"only return scores named as it declares ({evaluator.name!r})"
    )


class Measured(NamedTuple):
    """A case's response with its latency and how that was measured: `batch_size` queries
    retrieved in one call, the latency their seconds over their number (1: alone)."""

    response: QueryResponse
    latency_seconds: float | None
    batch_size: int | None


def error_record(stage: Stage, exc: BaseException, evaluator: str | None = None) -> EvaluationError:
    """An EvaluationError for an exception raised at `stage`."""
    return EvaluationError(
        stage=stage, error_type=type(exc).__name__, message=str(exc)[:2000], evaluator=evaluator
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
class CaseScorer:
    """Queries cases on a unit's knowledge base and scores them: the part of a unit's
    evaluation that works case by case (`UnitEvaluator` adds the build)."""

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
        return self.query_batch_size > 1 and any(kb.exact_in_batches(m) for m in self.query_modes)

    def from_cache(self, kb: KnowledgeBaseLike, mode: str, cached: CachedResponse) -> Measured:
        """A cached response with the latency measured when it was stored (an evaluator-only
        change re-scores without querying). An entry that did not record how its latency
        was measured, of a mode that may have been batched, has no latency to give."""
        size = cached.latency_batch_size
        latency = cached.latency_seconds
        if size is None and latency is not None:
            if kb.exact_in_batches(mode):
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
        answered: dict[tuple[str, str], Measured] = {}
        pending: dict[str, list[tuple[BenchmarkCase, str | None]]] = {}
        for case, mode in todo:
            if not kb.exact_in_batches(mode):
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
                responses = await kb.query_many(
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
                response = await kb.query_case(case, unit_id=unit_id, mode=mode, top_k=depth)
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
        # Validated from plain data in one call: the retrieved items become RetrievedItem
        # records there (`retrieved_items`).
        return EvaluationCaseResult.model_validate(
            {
                **common,
                "scores": tuple(scores),
                "retrieved": retrieved_items(response, self.key_layout),
                "answer": response.answer,
                "latency_seconds": latency,
                "latency_batch_size": batch_size,
                "scoring_seconds": time.perf_counter() - scoring_started,
                "error": error,
            }
        )
