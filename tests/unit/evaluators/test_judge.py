"""The LLM judge against a real local OpenAI-compatible server: verdicts, cache, retries,
failures, timeouts, skips, secrets, template checks and how undetermined scores summarise."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from heta_eval.config.components import instantiate
from heta_eval.endpoints import EndpointError
from heta_eval.evaluators.judge import (
    DEFAULT_PROMPT,
    DEFAULT_SYSTEM,
    LLMJudge,
    parse_verdict,
)
from heta_eval.evaluators.summary import summarize
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkExpected,
    EvaluationCaseResult,
    EvaluationScore,
    QueryResponse,
    QueryResult,
    SourceRef,
)
from tests.conftest import REPO
from tests.openai_server import ChatServer, Reply, completion, serve_chat

KEY_ENV = "HETA_JUDGE_TEST_KEY"
SECRET = "sk-test-SECRET-9f3c1e77"
TEMPLATE = "Question: {question}\nExpected: {expected}\nAnswer: {answer}"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with serve_chat() as state:
        yield state


@pytest.fixture(autouse=True)
def fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)


# -- helpers ---------------------------------------------------------------------------------


def make_judge(server: ChatServer, tmp_path: Path, **overrides: Any) -> LLMJudge:
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "model": "judge-test",
        "api_key_env": KEY_ENV,
        "prompt": TEMPLATE,
        "cache_dir": tmp_path / "cache",
        "timeout": 2.0,
        "max_retries": 3,
        "backoff_seconds": 0.01,
    }
    options.update(overrides)
    return LLMJudge(**options)


def case(*answers: str, query: str = "What is the capital of France?") -> BenchmarkCase:
    return BenchmarkCase(case_id="c1", query=query, expected=BenchmarkExpected(answers=answers))


def response(answer: str | None, *texts: str) -> QueryResponse:
    results = tuple(
        QueryResult(
            id=f"d{i}#0",
            text=text,
            score=1.0,
            source=SourceRef(source_key=f"raw/d{i}", document_id=f"d{i}"),
        )
        for i, text in enumerate(texts)
    )
    return QueryResponse(query="q", mode="bm25", answer=answer, results=results)


def judge_one(judge: LLMJudge, c: BenchmarkCase, r: QueryResponse) -> EvaluationScore:
    """Evaluate in a fresh event loop (as the runner does) and close the HTTP client."""

    async def go() -> EvaluationScore:
        try:
            return await judge.evaluate(c, r)
        finally:
            await judge.aclose()

    return asyncio.run(go())


PARIS = case("Paris")


# -- tests -----------------------------------------------------------------------------------


def test_verdicts_and_the_request(server: ChatServer, tmp_path: Path) -> None:
    judge = make_judge(server, tmp_path, temperature=0.0, max_tokens=8)
    right = judge_one(judge, PARIS, response("It is Paris."))
    wrong = judge_one(judge, PARIS, response("It is Lyon."))
    assert (right.value, right.undetermined, right.details["cached"]) == (1.0, False, False)
    assert (wrong.value, wrong.details["verdict"]) == (0.0, "INCORRECT")
    assert right.name == "llm_judge" and server.count == 2
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.body["model"] == "judge-test"
    assert request.body["temperature"] == 0.0 and request.body["max_tokens"] == 8
    assert request.body["messages"] == [
        {"role": "system", "content": DEFAULT_SYSTEM},
        {
            "role": "user",
            "content": (
                "Question: What is the capital of France?\nExpected: Paris\nAnswer: It is Paris."
            ),
        },
    ]


def test_default_prompt_renders_every_field(server: ChatServer, tmp_path: Path) -> None:
    server.replies.append(Reply(body=completion("Verdict: correct.")))
    judge = make_judge(server, tmp_path, prompt=DEFAULT_PROMPT, system_prompt=None)
    score = judge_one(judge, case("57%", "0.57"), response("About 57 percent."))
    assert score.value == 1.0
    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user"]
    prompt = messages[0]["content"]
    assert "What is the capital of France?" in prompt and "57% | 0.57" in prompt
    assert "About 57 percent." in prompt and "CORRECT or INCORRECT" in prompt

    with_context = make_judge(
        server, tmp_path, prompt="{context}|{answer}", context_results=2, context_chars=9
    )
    rendered = with_context.render(PARIS, response("x", "alpha", "beta", "gamma"))
    assert rendered == "alpha\n\nbe|x"


def test_cache_hits_and_misses(server: ChatServer, tmp_path: Path) -> None:
    judge = make_judge(server, tmp_path)
    first = judge_one(judge, PARIS, response("Paris"))
    second = judge_one(make_judge(server, tmp_path), PARIS, response("Paris"))
    assert first.value == second.value == 1.0
    assert (first.details["cached"], second.details["cached"], server.count) == (False, True, 1)

    judge_one(make_judge(server, tmp_path, prompt=TEMPLATE + "\n"), PARIS, response("Paris"))
    assert server.count == 2
    judge_one(make_judge(server, tmp_path, model="other-judge"), PARIS, response("Paris"))
    assert server.count == 3 and server.requests[-1].body["model"] == "other-judge"

    files = sorted((tmp_path / "cache").glob("*.json"))
    assert len(files) == 3 and not list((tmp_path / "cache").glob("*.tmp"))
    path = tmp_path / "cache" / f"{judge.cache_key(judge.render(PARIS, response('Paris')))}.json"
    path.write_text("{not json", encoding="utf-8")
    again = judge_one(judge, PARIS, response("Paris"))
    assert (again.value, again.details["cached"], server.count) == (1.0, False, 4)
    assert json.loads(path.read_text(encoding="utf-8"))["verdict"] == "CORRECT"


def test_retries_on_5xx_429_and_malformed_bodies(server: ChatServer, tmp_path: Path) -> None:
    server.replies += [
        Reply(500, {"error": "boom"}),
        Reply(429, {"error": "slow down"}, headers={"Retry-After": "0"}),
    ]
    score = judge_one(make_judge(server, tmp_path), PARIS, response("Paris"))
    assert score.value == 1.0 and server.count == 3

    server.replies += [Reply(200, "{not json"), Reply(200, {"choices": []})]
    score = judge_one(make_judge(server, tmp_path / "b"), PARIS, response("Paris"))
    assert score.value == 1.0 and server.count == 6


def test_persistent_failure_is_a_failed_metric(server: ChatServer, tmp_path: Path) -> None:
    server.replies += [Reply(503, {"error": "down"}) for _ in range(10)]
    judge = make_judge(server, tmp_path, max_retries=2)
    with pytest.raises(EndpointError) as info:
        judge_one(judge, PARIS, response("Paris"))
    reason = str(info.value)
    assert "HTTP 503" in reason and "3 attempts" in reason and server.base_url in reason
    assert server.count == 3 and not list((tmp_path / "cache").glob("*.json"))

    # Other 4xx are not retried.
    server.replies[:] = [Reply(400, {"error": {"message": "unknown model"}})]
    with pytest.raises(EndpointError, match=r"HTTP 400.*unknown model"):
        judge_one(judge, PARIS, response("Paris"))
    assert server.count == 4


def test_timeouts_are_retried_then_fail(server: ChatServer, tmp_path: Path) -> None:
    server.replies += [Reply(delay=5.0) for _ in range(2)]
    judge = make_judge(server, tmp_path, timeout=0.2, max_retries=1)
    started = time.monotonic()
    with pytest.raises(EndpointError, match="timed out"):
        judge_one(judge, PARIS, response("Paris"))
    elapsed = time.monotonic() - started
    assert server.count == 2 and elapsed < 3


def test_unparseable_verdicts_are_undetermined_and_not_cached(
    server: ChatServer, tmp_path: Path
) -> None:
    server.replies.append(Reply(body=completion("maybe")))
    judge = make_judge(server, tmp_path)
    score = judge_one(judge, PARIS, response("Paris"))
    assert score.undetermined and score.details["raw"] == "maybe"
    assert not list((tmp_path / "cache").glob("*.json"))
    assert judge_one(judge, PARIS, response("Paris")).value == 1.0 and server.count == 2


@pytest.mark.parametrize(
    ("raw", "verdict"),
    [
        ("CORRECT", "CORRECT"),
        (" incorrect.\n", "INCORRECT"),
        ("**Correct**", "CORRECT"),
        ("Verdict: correct", "CORRECT"),
        ("Final verdict = INCORRECT!", "INCORRECT"),
        ("The answer is correct.", "CORRECT"),
        ("<think>is it correct?</think>\nINCORRECT", "INCORRECT"),
        ("maybe", None),
        ("", None),
        ("CORRECT or INCORRECT", None),
        ("not correct", None),
        ("correctly", None),
    ],
)
def test_parse_verdict(raw: str, verdict: str | None) -> None:
    assert parse_verdict(raw) == verdict


def test_skips_make_no_request(server: ChatServer, tmp_path: Path) -> None:
    judge = make_judge(server, tmp_path)
    no_answer = judge_one(judge, PARIS, response(None))
    no_expected = judge_one(judge, case(), response("Paris"))
    assert no_answer.skipped_reason == "no answer generated" and no_answer.value is None
    assert no_expected.skipped_reason == "no expected answers" and not no_expected.undetermined
    assert server.count == 0


def test_the_secret_never_leaks(
    server: ChatServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    judge = make_judge(server, tmp_path, max_retries=1)
    good = judge_one(judge, PARIS, response("Paris"))
    # A server that echoes the Authorization header in its error body.
    server.replies += [Reply(500, f"bad {SECRET}"), Reply(401, f"invalid key Bearer {SECRET}")]
    with pytest.raises(EndpointError) as info:
        judge_one(judge, PARIS, response("Lyon"))
    bad = str(info.value)
    assert good.value == 1.0 and "HTTP 401" in bad and "***" in bad
    texts = [
        repr(judge),
        repr(judge.client),
        good.model_dump_json(),
        bad,
        caplog.text,
        *(p.read_text(encoding="utf-8") for p in (tmp_path / "cache").glob("*.json")),
    ]
    assert caplog.text and len(texts) == 6  # one cache file: the determined verdict
    assert not [t for t in texts if SECRET in t]
    assert KEY_ENV in repr(judge)


def test_missing_key_names_the_variable(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(EndpointError, match=KEY_ENV):
        judge_one(make_judge(server, tmp_path), PARIS, response("Paris"))
    assert server.count == 0

    local = make_judge(server, tmp_path, api_key_env=None)
    assert judge_one(local, PARIS, response("Paris")).value == 1.0
    assert "authorization" not in server.requests[0].headers


def test_template_validation() -> None:
    options = {"base_url": "http://127.0.0.1:1/v1", "model": "m"}
    with pytest.raises(ValueError, match=r"unknown field \{questoin\}.*\{question\}"):
        LLMJudge(**options, prompt="{questoin} {answer}")
    with pytest.raises(ValueError, match=r"unknown field \{\}"):
        LLMJudge(**options, prompt="{} {answer}")
    with pytest.raises(ValueError, match="must contain"):
        LLMJudge(**options, prompt="{question} only")
    with pytest.raises(ValueError, match=r"valid str\.format"):
        LLMJudge(**options, prompt="{answer} {")
    assert LLMJudge(**options, prompt='{{"json": true}} {answer}').prompt.startswith("{{")


def test_config_option_uses_the_default_prompt(tmp_path: Path) -> None:
    spec = OmegaConf.to_container(OmegaConf.load(REPO / "conf/evaluator/llm_judge.yaml"))
    assert isinstance(spec, dict) and spec["use_benchmark_defaults"] is True
    judge = instantiate(spec["extra"][0])
    assert isinstance(judge, LLMJudge) and judge.name == "llm_judge"
    assert judge.prompt == DEFAULT_PROMPT and judge.system_prompt == DEFAULT_SYSTEM


def test_undetermined_scores_are_counted_apart() -> None:
    def result(
        case_id: str, value: float | None, undetermined: bool = False
    ) -> EvaluationCaseResult:
        score = EvaluationScore(name="llm_judge", value=value, undetermined=undetermined)
        return EvaluationCaseResult(
            case_id=case_id, unit_id="u", query_mode="bm25", query="q", scores=(score,)
        )

    skipped = EvaluationScore(name="llm_judge", value=None, skipped_reason="no answer generated")
    results = [
        result("a", 1.0),
        result("b", 0.0),
        result("c", 1.0),
        result("d", None, undetermined=True),
        result("e", None, undetermined=True),
        EvaluationCaseResult(
            case_id="f", unit_id="u", query_mode="bm25", query="q", scores=(skipped,)
        ),
    ]
    summary, details = summarize(results, ["bm25"], ["llm_judge"], resamples=10)
    assert summary["bm25.llm_judge"] == pytest.approx(2 / 3)
    aggregate = details["bm25.llm_judge"]
    assert (aggregate.scored, aggregate.undetermined, aggregate.skipped, aggregate.failed) == (
        3,
        2,
        1,
        0,
    )
