"""Our retrieval metrics agree with trec_eval (pytrec_eval) to 1e-9 on randomised runs:
graded relevance, score ties, duplicate hits from several chunks of one document, queries
whose judgments are all non-relevant, and cutoffs larger than the run."""

from __future__ import annotations

import asyncio
import random

import pytest
import pytrec_eval

from heta_eval.evaluators import retrieval_metrics
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkEvidence,
    BenchmarkExpected,
    QueryResponse,
    QueryResult,
    SourceRef,
)

KS = (1, 3, 5, 10, 20, 50)
TREC = {
    "ndcg": "ndcg_cut_{k}",
    "map": "map_cut_{k}",
    "precision": "P_{k}",
    "recall": "recall_{k}",
}


def _random_query(
    rng: random.Random, qid: str
) -> tuple[dict[str, int], list[tuple[str, int, float]]]:
    docs = [f"d{i:02d}" for i in range(rng.randint(5, 40))]
    judged = rng.sample(docs, rng.randint(1, min(12, len(docs))))
    all_zero = rng.random() < 0.1
    qrels = {d: 0 if all_zero else rng.choice([0, 1, 1, 2, 3]) for d in judged}
    hits = []
    for doc in rng.sample(docs, rng.randint(1, len(docs))):
        for chunk in range(rng.choice([1, 1, 1, 2, 3])):  # several chunks of one document
            score = rng.choice([0.5, 1.0, 1.5, 2.0, 2.5]) if rng.random() < 0.5 else rng.random()
            hits.append((doc, chunk, round(score, 3)))
    rng.shuffle(hits)
    return qrels, hits


def _case(qid: str, qrels: dict[str, int]) -> BenchmarkCase:
    evidence = tuple(
        BenchmarkEvidence(locator={"document_id": d}, metadata={"relevance": g})
        for d, g in qrels.items()
    )
    return BenchmarkCase(case_id=qid, query="q", expected=BenchmarkExpected(evidence=evidence))


def _response(hits: list[tuple[str, int, float]]) -> QueryResponse:
    results = tuple(
        QueryResult(
            id=f"{doc}#{chunk}",
            text="",
            score=score,
            source=SourceRef(source_key=f"raw/{doc}", document_id=doc, chunk_id=f"{doc}#{chunk}"),
        )
        for doc, chunk, score in hits
    )
    return QueryResponse(query="q", mode="bm25", results=results)


async def _score_all(
    evaluators: list, case: BenchmarkCase, response: QueryResponse
) -> dict[str, float | None]:
    return {e.name: (await e.evaluate(case, response)).value for e in evaluators}


def test_randomised_runs_agree_with_trec_eval() -> None:
    rng = random.Random(20261130)
    evaluators = retrieval_metrics(
        metrics=["ndcg", "map", "precision", "recall", "mrr", "success", "r_precision"], ks=KS
    )
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    ours: dict[str, dict[str, float | None]] = {}
    for n in range(400):
        qid = f"q{n}"
        judgments, hits = _random_query(rng, qid)
        qrels[qid] = judgments
        best: dict[str, float] = {}
        for doc, _, score in hits:
            best[doc] = max(score, best.get(doc, score))
        run[qid] = best
        ours[qid] = asyncio.run(_score_all(evaluators, _case(qid, judgments), _response(hits)))
    cutoffs = ",".join(map(str, KS))
    measures = {
        f"ndcg_cut.{cutoffs}",
        f"map_cut.{cutoffs}",
        f"P.{cutoffs}",
        f"recall.{cutoffs}",
        "recip_rank",
        "Rprec",
        "success.1,5,10",
    }
    reference = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert set(reference) == set(qrels)
    compared = 0
    for qid, expected in reference.items():
        mine = ours[qid]
        for k in KS:
            for metric, trec in TREC.items():
                assert mine[f"{metric}@{k}"] == pytest.approx(
                    expected[trec.format(k=k)], abs=1e-9
                ), (qid, metric, k)
                compared += 1
            rr = expected["recip_rank"]
            assert mine[f"mrr@{k}"] == pytest.approx(rr if rr >= 1 / k - 1e-12 else 0.0, abs=1e-9)
        for k in (1, 5, 10):
            assert mine[f"success@{k}"] == pytest.approx(expected[f"success_{k}"], abs=1e-9)
        assert mine["r_precision"] == pytest.approx(expected["Rprec"], abs=1e-9)
        compared += 1
    assert compared > 400 * 24


def test_cases_without_judgments_are_skipped_and_empty_runs_score_zero() -> None:
    (ndcg,) = retrieval_metrics(metrics=["ndcg"], ks=[10])
    unjudged = asyncio.run(
        ndcg.evaluate(BenchmarkCase(case_id="x", query="q"), _response([("d1", 0, 1.0)]))
    )
    assert unjudged.value is None and unjudged.skipped_reason == "no judgments"
    empty = asyncio.run(ndcg.evaluate(_case("y", {"d1": 1}), _response([])))
    assert empty.value == 0.0


def test_ties_are_broken_by_document_id_descending() -> None:
    (mrr,) = retrieval_metrics(metrics=["mrr"], ks=[1])
    tied = _response([("a", 0, 1.0), ("b", 0, 1.0)])  # engine order a, b; trec_eval ranks b first
    assert asyncio.run(mrr.evaluate(_case("t", {"b": 1}), tied)).value == 1.0
    assert asyncio.run(mrr.evaluate(_case("t", {"a": 1}), tied)).value == 0.0


def test_the_ranking_is_shared_by_metrics_of_one_response_and_not_across_responses() -> None:
    from heta_eval.evaluators.retrieval import judged_ranking

    case = _case("q1", {"a": 1, "q1": 1})
    first = _response([("b", 0, 2.0), ("q1", 0, 1.5), ("a", 0, 1.0)])
    second = _response([("a", 0, 2.0), ("b", 0, 1.0)])
    grades, ranked = judged_ranking(case, first)
    assert judged_ranking(case, first) == (grades, ranked)
    assert judged_ranking(case, first)[1] is ranked  # computed once
    assert ranked == ("b", "q1", "a")
    assert judged_ranking(case, first, ignore_identical_ids=True)[1] == ("b", "a")
    assert judged_ranking(case, second)[1] == ("a", "b")
    with pytest.raises(TypeError):
        grades["a"] = 0  # type: ignore[index]  # shared, so read-only
