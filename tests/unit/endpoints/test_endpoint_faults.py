"""LLM and embedding endpoints that time out, answer 500/429 or send malformed JSON: each call
is retried with backoff, then the failure is recorded on its case; healthy cases are scored.
The server on 127.0.0.1 misbehaves on purpose and counts what it received (no timed asserts;
pytest's timeout guards against a hang)."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from heta_eval import BenchmarkRunner, EvaluationReport, RunnerSettings
from heta_eval.benchmarks import JsonlBenchmark
from heta_eval.kb import KnowledgeRecipe
from tests.conftest import REPO, load_recipe
from tests.openai_server import ChatServer, Reply, completion, serve_chat
from tests.reliability.conftest import small_benchmark

ATTEMPTS = 3  # max_retries=2
CLIENT = {"max_retries": ATTEMPTS - 1, "backoff_seconds": 0.01, "timeout": 0.5}

pytestmark = pytest.mark.timeout(120)


def _run(tmp_path: Path, recipe: KnowledgeRecipe) -> EvaluationReport:
    docs, cases = small_benchmark(tmp_path, cases=8)
    benchmark = JsonlBenchmark(docs, cases)
    settings = RunnerSettings(
        output_dir=tmp_path / "run",
        store_dir=tmp_path / "store",
        workspace_dir=tmp_path / "data",
        cache_dir=tmp_path / "cache",
    )
    runner = BenchmarkRunner(
        benchmark=benchmark,
        recipe=recipe,
        evaluators=benchmark.evaluators(),
        settings=settings,
    )
    return asyncio.run(runner.run())


def _topic(text: str) -> str | None:
    found = re.search(r"tell me about the (\w+)", text)
    return found.group(1) if found else None


# -- the LLM answerer ------------------------------------------------------------------------


def _misbehaving_chat(seen: Counter[str]) -> Any:
    """Per question topic: always 500, always 429, malformed JSON, a stall past the timeout,
    two 503s then an answer; every other topic is answered at once."""

    def respond(path: str, body: Any) -> Reply:
        topic = _topic(body["messages"][-1]["content"]) or "?"
        seen[topic] += 1
        if topic == "kelp":
            return Reply(500, {"error": {"message": "internal"}})
        if topic == "comet":
            return Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
        if topic == "glacier":
            return Reply(200, '{"choices": [{"message": ')
        if topic == "violin":
            return Reply(body=completion("too late"), delay=5.0)
        if topic == "copper" and seen[topic] <= 2:
            return Reply(503, {"error": {"message": "warming up"}})
        return Reply(body=completion(f"It is the {topic} [1]."))

    return respond


def test_answerer_faults_are_retried_then_recorded_per_case(tmp_path: Path) -> None:
    seen: Counter[str] = Counter()
    with serve_chat() as server:
        server.respond = _misbehaving_chat(seen)
        recipe = load_recipe(
            "bm25",
            answerer={
                "_target_": "heta_eval.kb.LLMAnswerer",
                "base_url": server.base_url,
                "model": "answer-test",
                "api_key_env": None,
                "cache_dir": str(tmp_path / "answers"),
                **CLIENT,
            },
        )
        report = _run(tmp_path, recipe)
    errors = {_topic(r.query): r.error for r in report.failed_cases}
    assert sorted(errors) == ["comet", "glacier", "kelp", "violin"]
    for topic, cause in [
        ("kelp", "HTTP 500 Internal Server Error"),
        ("comet", "HTTP 429 Too Many Requests"),
        ("glacier", "malformed response (HTTP 200 OK): not JSON"),
        ("violin", "timed out after 0.5s"),
    ]:
        error = errors[topic]
        assert error is not None and error.stage == "query" and error.error_type == "EndpointError"
        assert f"failed after {ATTEMPTS} attempts: {cause}" in error.message
        assert seen[topic] == ATTEMPTS  # retried, then given up
    assert seen["copper"] == 3  # two 503s, then the answer
    answered = {_topic(r.query): r.answer for r in report.case_results if r.error is None}
    assert answered == {t: f"It is the {t} [1]." for t in ("copper", "falcon", "tundra", "saffron")}
    assert report.run.cases.failed == 4 and report.run.cases.scored == 4


# -- OpenAI-compatible embeddings --------------------------------------------------------------


def _vector(text: str, dim: int = 32) -> list[float]:
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dim] += 1.0
    return vector


def _embeddings(body: Any) -> dict[str, Any]:
    data = [{"index": i, "embedding": _vector(t)} for i, t in enumerate(body["input"])]
    return {"object": "list", "data": data, "model": body["model"]}


def _dense_recipe(server: ChatServer, tmp_path: Path) -> KnowledgeRecipe:
    spec = yaml.safe_load((REPO / "conf" / "recipe" / "dense.yaml").read_text())
    spec["chunker"].update(chunk_size=None, chunk_overlap=0)
    spec["indexes"]["dense"].update(
        cache_dir=str(tmp_path / "emb"),
        encoder={
            "_target_": "heta_eval.kb.index.encoders.OpenAIEmbeddingEncoder",
            "base_url": server.base_url,
            "model": "embed-test",
            "api_key_env": None,
            "batch_size": 100,
            **CLIENT,
        },
    )
    return KnowledgeRecipe.model_validate(spec)


def test_embedding_faults_at_query_time_are_recorded_per_case(tmp_path: Path) -> None:
    seen: Counter[str] = Counter()

    def respond(path: str, body: Any) -> Reply:
        topic = _topic(body["input"][0]) if len(body["input"]) == 1 else "documents"
        seen[topic or "?"] += 1
        if topic == "kelp":
            return Reply(502, "bad gateway")
        if topic == "comet":
            return Reply(200, {"object": "list", "data": [{"index": 0}]})  # no embedding
        if topic == "glacier":
            return Reply(body=_embeddings(body), delay=5.0)
        return Reply(body=_embeddings(body))

    with serve_chat() as server:
        server.paths = {"/v1/embeddings"}
        server.respond = respond
        report = _run(tmp_path, _dense_recipe(server, tmp_path))
    assert seen["documents"] == 1  # the build's one batch
    errors = {_topic(r.query): r.error for r in report.failed_cases}
    assert sorted(errors) == ["comet", "glacier", "kelp"]
    for topic, cause in [
        ("kelp", "HTTP 502 Bad Gateway"),
        ("comet", "malformed response (HTTP 200 OK)"),
        ("glacier", "timed out after 0.5s"),
    ]:
        error = errors[topic]
        assert error is not None and error.stage == "query"
        assert f"failed after {ATTEMPTS} attempts: {cause}" in error.message
        assert seen[topic] == ATTEMPTS
    assert report.run.cases.scored == 5
    assert report.score_details["dense.evidence_recall@1"].scored == 5


def test_an_embedding_endpoint_down_at_build_fails_the_unit_not_the_run(tmp_path: Path) -> None:
    with serve_chat() as server:
        server.paths = {"/v1/embeddings"}
        server.respond = lambda path, body: Reply(500, {"error": {"message": "down"}})
        report = _run(tmp_path, _dense_recipe(server, tmp_path))
        assert server.count == ATTEMPTS
    assert len(report.failed_cases) == len(report.case_results) == 8
    error = report.failed_cases[0].error
    assert error is not None and error.stage == "build"
    assert f"failed after {ATTEMPTS} attempts: HTTP 500 Internal Server Error" in error.message
    assert report.run.run_units[0].build_failed is True
