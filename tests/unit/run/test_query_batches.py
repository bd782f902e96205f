"""The unit evaluator's cases retrieved together (one bm25s call per batch) get the case
results each gets alone, and their latencies say how they were measured."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from heta_eval.evaluators import NDCGAtK, RecallAtK
from heta_eval.json_cache import JsonFileCache
from heta_eval.kb import KnowledgeBase, LocalObjectStore
from heta_eval.kb.build_cache import BuildCache, CacheMode
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkEvidence,
    BenchmarkExpected,
    BenchmarkRunUnit,
    EvaluationCaseResult,
)
from heta_eval.run.settings import QUERY_BATCH_SIZE
from heta_eval.run.units import UnitEvaluator, UnitPlan
from tests.conftest import load_recipe
from tests.scifact_corpus import tied_corpus


@pytest.fixture(scope="module")
def corpus(
    tmp_path_factory: pytest.TempPathFactory, scifact_dir: Path
) -> tuple[LocalObjectStore, list, list]:
    return tied_corpus(tmp_path_factory.mktemp("store"), scifact_dir)


def _kb(store: LocalObjectStore, sources: list) -> KnowledgeBase:
    return KnowledgeBase._build(load_recipe(), "kb", store, sources)


def _cases(queries: list[str], sources: list) -> list[BenchmarkCase]:
    cases = []
    for i, query in enumerate(queries):
        document = sources[(7 * i) % len(sources)].document_id
        # One case bears the id of a document it retrieves: dropped (ignore_identical_ids).
        case_id = sources[3].document_id if i == len(queries) - 1 else f"q{i}"
        cases.append(
            BenchmarkCase(
                case_id=case_id,
                query=query,
                expected=BenchmarkExpected(
                    evidence=(BenchmarkEvidence(locator={"document_id": document}),)
                ),
            )
        )
    return cases


def _with_fusion() -> dict:
    """The bm25 recipe's overrides that add an unstemmed BM25 index and a fusion of the two:
    a mode whose queries are ranked one at a time (the fusion is not batched)."""
    bm25 = load_recipe().manifest()["indexes"]["bm25"]
    exact = {**bm25, "stemmer": None, "stopwords": None}
    fusion = {"_target_": "heta_eval.kb.ReciprocalRankFusion", "modes": ["bm25", "exact"]}
    return {
        "indexes": {"bm25": bm25, "exact": exact},
        "fusions": {"fusion": fusion},
        "query_modes": ["bm25", "exact", "fusion"],
    }


def _evaluator(
    store: LocalObjectStore,
    cache: BuildCache,
    query_batch_size: int = QUERY_BATCH_SIZE,
    modes: tuple[str, ...] = ("bm25",),
) -> UnitEvaluator:
    return UnitEvaluator(
        recipe=load_recipe(**_with_fusion()) if "fusion" in modes else load_recipe(),
        evaluators=(
            NDCGAtK(k=10, ignore_identical_ids=True),
            RecallAtK(k=20, ignore_identical_ids=True),
        ),
        query_modes=modes,
        top_k=20,
        max_concurrent_queries=8,
        slice_by=(),
        store=store,
        cache=cache,
        ignore_identical_ids=True,
        query_batch_size=query_batch_size,
    )


def comparable(result: EvaluationCaseResult) -> dict:
    """Everything but the seconds and how they were measured."""
    return result.model_dump(exclude={"latency_seconds", "latency_batch_size", "scoring_seconds"})


def test_unit_evaluator_batches_give_the_case_results_of_one_query_at_a_time(
    corpus: tuple, tmp_path: Path
) -> None:
    store, sources, queries = corpus
    cases = _cases(queries, sources)
    evaluator = _evaluator(store, BuildCache(tmp_path / "cache", "off"), query_batch_size=8)
    plan = UnitPlan(BenchmarkRunUnit(unit_id="corpus"), (), tuple(cases))
    # 63 cases in batches of 8: seven full ones and a last one of 7.
    batched = asyncio.run(evaluator.run(plan, sources, "kb")).results

    kb = _kb(store, sources)
    alone = [asyncio.run(evaluator.evaluate_case(kb, "corpus", case, "bm25")) for case in cases]

    assert [comparable(r) for r in batched] == [comparable(r) for r in alone]
    assert [r.case_id for r in batched] == [c.case_id for c in cases]
    assert all(r.error is None for r in batched)
    identical = batched[-1]
    assert identical.retrieved and all(
        item.document_id != identical.case_id for item in identical.retrieved
    )
    # Each latency is its batch's seconds shared out, and says so.
    assert [r.latency_batch_size for r in batched] == [8] * 56 + [7] * 7
    assert len({r.latency_seconds for r in batched[:8]}) == 1  # one batch, one share each
    assert {r.latency_batch_size for r in alone} == {1}


def test_query_batch_size_one_measures_every_query_alone(corpus: tuple, tmp_path: Path) -> None:
    store, sources, queries = corpus
    cases = _cases(queries, sources)[:20]
    plan = UnitPlan(BenchmarkRunUnit(unit_id="corpus"), (), tuple(cases))
    results = {}
    for size in (QUERY_BATCH_SIZE, 1):
        evaluator = _evaluator(store, BuildCache(tmp_path / f"cache-{size}", "off"), size)
        results[size] = asyncio.run(evaluator.run(plan, sources, "kb")).results
    batched, alone = results[QUERY_BATCH_SIZE], results[1]
    assert {r.latency_batch_size for r in batched} == {20}
    assert {r.latency_batch_size for r in alone} == {1}
    assert len({r.latency_seconds for r in alone}) > 1  # each query's own seconds
    assert [comparable(r) for r in alone] == [comparable(r) for r in batched]


def test_cached_responses_keep_their_latency_and_how_it_was_measured(
    corpus: tuple, tmp_path: Path
) -> None:
    store, sources, queries = corpus
    # Digests of the documents' bytes: a knowledge base (and its responses) can be cached.
    sources = [
        s.model_copy(update={"sha256": hashlib.sha256(store.get(s.key)).hexdigest()})
        for s in sources
    ]
    cases = _cases(queries, sources)[:10]
    plan = UnitPlan(BenchmarkRunUnit(unit_id="corpus"), (), tuple(cases))
    # BM25 retrieved in batches; the fusion of two rankings, one query at a time.
    fusion = {"modes": ("bm25", "fusion")}

    def run(mode: CacheMode, size: int = QUERY_BATCH_SIZE) -> list[EvaluationCaseResult]:
        evaluator = _evaluator(store, BuildCache(tmp_path / "cache", mode), size, **fusion)
        return asyncio.run(evaluator.run(plan, sources, "kb")).results

    def measured(results: list[EvaluationCaseResult]) -> list[tuple]:
        return [(r.query_mode, r.latency_seconds, r.latency_batch_size) for r in results]

    first = run("readwrite")
    sizes = {(r.query_mode, r.latency_batch_size) for r in first}
    assert sizes == {("bm25", 10), ("fusion", 1)}

    # Served from the response cache, one query at a time or in batches alike: the latency
    # measured when the response was stored, with that measurement's batch size.
    for size in (1, QUERY_BATCH_SIZE):
        again = run("read", size)
        assert measured(again) == measured(first)
        assert [comparable(r) for r in again] == [comparable(r) for r in first]

    # Entries written before latencies said how they were measured: the response is used;
    # the latency of a mode that may have been batched (a batch mean or not) is not, that
    # of a mode never batched was its query's own.
    responses = JsonFileCache(tmp_path / "cache" / "responses", "responses")
    keys = [path.name.removesuffix(".json") for path in responses.directory.glob("*.json")]
    assert len(keys) == 2 * len(cases)
    for key in keys:
        entry = responses.get(key)
        assert entry is not None and entry.pop("latency_batch_size") in (1, 10)
        responses.put(key, entry)
    legacy = run("read")
    assert [comparable(r) for r in legacy] == [comparable(r) for r in first]
    expected = [(m, None, None) if m == "bm25" else (m, s, 1) for m, s, _ in measured(first)]
    assert measured(legacy) == expected
