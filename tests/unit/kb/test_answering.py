"""Hybrid query modes (rank and score fusion) and answer generation (extractive and LLM)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from heta_eval import BenchmarkRunner, RunnerSettings
from heta_eval.benchmarks import SampleBenchmark
from heta_eval.evaluators import AnswerContains, AnswerExactMatch
from heta_eval.kb import (
    ExtractiveAnswerer,
    KnowledgeRecipe,
    LLMAnswerer,
    ReciprocalRankFusion,
    WeightedScoreFusion,
)
from heta_eval.records import QueryResult, SourceRef

from .conftest import load_recipe
from .openai_server import Reply, completion, serve_chat


def test_reciprocal_rank_fusion_by_hand() -> None:
    rrf = ReciprocalRankFusion(modes=["a", "b"], k=60)
    rankings = {"a": [(1, 9.0), (2, 5.0), (3, 1.0)], "b": [(3, 0.9), (1, 0.8)]}
    fused = rrf.fuse(rankings, top_k=3)
    expected = {1: 1 / 61 + 1 / 62, 2: 1 / 62, 3: 1 / 63 + 1 / 61}
    assert [p for p, _ in fused] == sorted(expected, key=lambda p: -expected[p])
    assert dict(fused) == pytest.approx(expected)
    assert ReciprocalRankFusion(modes=["a", "b"], depth=1).fuse(rankings, 5) == [
        (1, pytest.approx(1 / 61)),
        (3, pytest.approx(1 / 61)),
    ]
    with pytest.raises(ValueError, match="at least two"):
        ReciprocalRankFusion(modes=["a"])


def test_weighted_score_fusion_normalises_each_mode() -> None:
    rankings = {"a": [(1, 10.0), (2, 0.0)], "b": [(2, 3.0), (3, 1.0)]}
    minmax = WeightedScoreFusion(modes=["a", "b"], weights=[2.0, 1.0]).fuse(rankings, 3)
    assert dict(minmax) == pytest.approx({1: 2.0, 2: 1.0, 3: 0.0})
    zscore = WeightedScoreFusion(modes=["a", "b"], normalization="zscore").fuse(rankings, 3)
    assert dict(zscore) == pytest.approx({1: 1.0, 2: -1.0 + 1.0, 3: -1.0})
    with pytest.raises(ValueError, match="1 weights for 2 modes"):
        WeightedScoreFusion(modes=["a", "b"], weights=[1.0])


def _fusion_recipe() -> KnowledgeRecipe:
    spec = load_recipe().model_dump()
    spec["indexes"]["bm25_exact"] = {**spec["indexes"]["bm25"], "stemmer": None, "stopwords": None}
    spec["fusions"] = {
        "fusion": {"_target_": "heta_eval.kb.ReciprocalRankFusion", "modes": ["bm25", "bm25_exact"]}
    }
    spec["query_modes"] = []
    return KnowledgeRecipe.model_validate(spec)


def test_a_fusion_is_its_own_query_mode(tmp_path: Path) -> None:
    recipe = _fusion_recipe()
    assert recipe.query_modes == ("bm25", "bm25_exact", "fusion")
    # Fusions are chosen at query time: the build is the same with or without them.
    assert recipe.build_settings()["indexes"] == recipe.model_dump(mode="json")["indexes"]
    assert "fusions" not in recipe.build_settings()
    bench = SampleBenchmark()
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=recipe,
        evaluators=bench.evaluators(),
        settings=RunnerSettings(output_dir=tmp_path / "run", store_dir=tmp_path / "store"),
    )
    report = asyncio.run(runner.run())
    assert {r.query_mode for r in report.case_results} == {"bm25", "bm25_exact", "fusion"}
    assert report.score_summary["fusion.evidence_recall@5"] >= 0.9
    spec = recipe.model_dump()
    spec["fusions"]["fusion"]["modes"] = ["bm25", "dense"]
    with pytest.raises(
        ValueError, match=r"fusions\.fusion\.modes names modes that are not in indexes: \['dense'\]"
    ):
        KnowledgeRecipe.model_validate(spec)


def _result(i: int, text: str) -> QueryResult:
    return QueryResult(
        id=f"d{i}#0",
        text=text,
        score=1.0,
        source=SourceRef(source_key=f"raw/d{i}", document_id=f"d{i}"),
    )


def test_extractive_answer_is_the_best_matching_sentence() -> None:
    results = [
        _result(1, "Jupiter is large. Galileo discovered four moons of Jupiter in 1610."),
        _result(2, "Saturn has rings."),
    ]
    answer, citations = asyncio.run(
        ExtractiveAnswerer().answer("How many moons of Jupiter did Galileo discover?", results)
    )
    assert answer == "Galileo discovered four moons of Jupiter in 1610."
    assert citations == ("d1#0",)
    assert asyncio.run(ExtractiveAnswerer().answer("anything", [])) == (None, ())


def test_extractive_recipe_feeds_the_answer_metrics(tmp_path: Path) -> None:
    recipe = load_recipe().model_copy(
        update={"answerer": {"_target_": "heta_eval.kb.ExtractiveAnswerer"}}
    )
    bench = SampleBenchmark()
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=recipe,
        evaluators=(*bench.evaluators(), AnswerContains(), AnswerExactMatch()),
        settings=RunnerSettings(output_dir=tmp_path / "run", store_dir=tmp_path / "store"),
    )
    report = asyncio.run(runner.run())
    assert report.score_details["bm25.answer_contains"].scored == 48
    assert report.score_summary["bm25.answer_contains"] > 0.5
    assert all(r.answer for r in report.case_results)


def test_llm_answers_cite_passages_and_are_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANSWER_TEST_KEY", "sk-answer-secret")
    results = [_result(1, "Kelp forests grow in cold water."), _result(2, "Otters rest in kelp.")]
    with serve_chat() as server:
        server.replies.append(Reply(body=completion("In kelp forests [2].")))
        answerer = LLMAnswerer(
            base_url=server.base_url,
            model="answer-test",
            api_key_env="ANSWER_TEST_KEY",
            cache_dir=tmp_path / "answers",
            backoff_seconds=0.01,
        )
        answer, citations = asyncio.run(answerer.answer("Where do otters rest?", results))
        assert answer == "In kelp forests [2]." and citations == ("d2#0",)
        (request,) = server.requests
        prompt = request.body["messages"][-1]["content"]
        assert (
            "[1] Kelp forests grow in cold water." in prompt and "Where do otters rest?" in prompt
        )
        assert request.headers["authorization"] == "Bearer sk-answer-secret"
        again = asyncio.run(answerer.answer("Where do otters rest?", results))
        assert again == (answer, citations) and server.count == 1  # from the cache
        assert "sk-answer-secret" not in repr(answerer)
        for path in (tmp_path / "answers").iterdir():
            assert "sk-answer-secret" not in path.read_text()
        budget = LLMAnswerer(
            base_url=server.base_url, model="m", api_key_env=None, context_tokens=3
        )
        context, ids = budget.context(results)
        assert context.startswith("[1] Kelp")
        assert ids == ["d1#0"]  # the first passage always fits; the second would exceed 3


def test_llm_answer_prompt_must_name_its_fields() -> None:
    with pytest.raises(ValueError, match=r"\['\{context\}'\]"):
        LLMAnswerer(base_url="http://127.0.0.1:9/v1", model="m", prompt="{question} only")


def test_an_endpoint_reranker_reorders_the_top_results(tmp_path: Path) -> None:
    from heta_eval.kb.rerank import EndpointReranker

    results = [_result(1, "Saturn has rings."), _result(2, "Otters rest in kelp."), _result(3, "x")]
    scores = {"Saturn has rings.": 0.1, "Otters rest in kelp.": 0.9}
    with serve_chat() as server:
        server.paths.add("/v1/rerank")
        server.replies.append(
            Reply(
                body={
                    "results": [
                        {"index": i, "relevance_score": scores[text]}
                        for i, text in enumerate(["Saturn has rings.", "Otters rest in kelp."])
                    ]
                }
            )
        )
        reranker = EndpointReranker(
            base_url=server.base_url, model="rerank-test", api_key_env=None, top_n=2
        )
        ranked = asyncio.run(reranker.rerank("where do otters rest", results))
        assert [r.id for r in ranked] == ["d2#0", "d1#0"]  # the third result was not scored
        assert [r.score for r in ranked] == [0.9, 0.1]
        (request,) = server.requests
        assert request.path == "/v1/rerank"
        assert request.body["documents"] == ["Saturn has rings.", "Otters rest in kelp."]
        server.replies.append(Reply(body={"results": [{"index": 0, "relevance_score": 1.0}]}))
        server.replies.append(Reply(body={"results": [{"index": 0, "relevance_score": 1.0}]}))
        flaky = EndpointReranker(
            base_url=server.base_url,
            model="m",
            api_key_env=None,
            top_n=2,
            max_retries=1,
            backoff_seconds=0.01,
        )
        with pytest.raises(Exception, match="after 2 attempts"):
            asyncio.run(flaky.rerank("q", results))
