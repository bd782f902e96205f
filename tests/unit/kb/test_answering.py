"""Answer generation: extractive (the best matching sentence) and by an LLM endpoint
(citations, cache, the context budget)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from heta_eval import BenchmarkRunner, RunnerSettings
from heta_eval.benchmarks import SampleBenchmark
from heta_eval.evaluators import AnswerContains, AnswerExactMatch
from heta_eval.kb import ExtractiveAnswerer, LLMAnswerer
from heta_eval.records import QueryResult, SourceRef
from tests.conftest import load_recipe
from tests.openai_server import Reply, completion, serve_chat


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
