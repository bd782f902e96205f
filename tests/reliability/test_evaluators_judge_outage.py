"""An LLM judge that cannot be asked is a failed metric, never an undetermined one.

A real `heta-eval` run scores extractive answers with an LLM judge served by a local
OpenAI-compatible server (tests/openai_server.py) that refuses the key (401), then answers;
the MLflow store is read back with MlflowClient.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import InProcessCli
from ..openai_server import Reply, serve_chat
from .conftest import (
    jsonl_args,
    mlflow_runs,
    read_report,
    report_path,
    small_benchmark,
    write_jsonl,
)

JUDGE = "bm25.llm_judge"


def _judge_args(base_url: str, *extra: str) -> tuple[str, ...]:
    return (
        "recipe=bm25_extractive",
        "evaluator=llm_judge",
        f"evaluator.extra.0.base_url={base_url}",
        "evaluator.extra.0.api_key_env=null",
        "evaluator.extra.0.max_retries=0",
        "runner.limit=3",
        *extra,
    )


@pytest.mark.slow
def test_a_judge_endpoint_that_refuses_fails_the_metric_and_is_asked_again(
    cli: InProcessCli, tmp_path: Path
) -> None:
    root = tmp_path / "outputs"
    with serve_chat() as server:
        refused = Reply(401, {"error": {"message": "invalid api key"}})
        server.replies += [refused] * 3
        down = cli(*_judge_args(server.base_url))
        assert server.count == 3
        # Not an undetermined verdict: every case's judge failed, and the run with it.
        assert down.returncode == 1, down.stdout + down.stderr
        assert "3 of 3 case results failed (all of them: 3 at evaluate)" in down.stderr
        assert "HTTP 401" in down.stderr
        report = read_report(report_path(down.stdout))
        detail = report.score_details[JUDGE]
        assert (detail.scored, detail.undetermined, detail.failed) == (0, 0, 3)
        assert JUDGE not in report.score_summary
        # The retrieval metrics of these cases are kept.
        assert report.score_details["bm25.ndcg@10"].scored == 3
        errors = {r.error.evaluator for r in report.case_results if r.error is not None}
        assert errors == {"llm_judge"}
        (run,) = mlflow_runs(root)
        assert run.info.status == "FAILED"

        # The endpoint answers again, but refuses one request: with max_failure_rate=0 the
        # one failed case fails the run; the other two are asked again and scored.
        server.replies.append(refused)
        gated = cli(*_judge_args(server.base_url, "runner.max_failure_rate=0"))
        assert gated.returncode == 1, gated.stdout + gated.stderr
        assert "already evaluated" not in gated.stdout + gated.stderr
        assert "1 of 3 case results failed" in gated.stderr
        assert server.count == 6

        # Back for good: the failed case is asked again, nothing is reused from the outage.
        fixed = cli(*_judge_args(server.base_url, "runner.max_failure_rate=0"))
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        assert server.count == 7
    report = read_report(report_path(fixed.stdout))
    assert report.score_details[JUDGE].scored == 3 and not report.failed_cases
    assert report.run.retried_cases == 1
    (run,) = mlflow_runs(root)  # the same tracking run, continued and now finished
    assert run.info.status == "FINISHED"


def test_a_judge_that_failed_wherever_it_applies_fails_the_run(
    cli: InProcessCli, tmp_path: Path
) -> None:
    # One case has no expected answer: the judge skips it, fails the two others. Not every
    # case result failed, yet nothing stands for the metric.
    docs, cases = small_benchmark(tmp_path, cases=3)
    rows = [json.loads(line) for line in cases.read_text().splitlines()]
    rows[0]["answers"] = []
    write_jsonl(cases, rows)
    with serve_chat() as server:
        server.replies += [Reply(503, {"error": "down"})] * 2
        done = cli(
            *jsonl_args(docs, cases, "tracking=none"),
            *_judge_args(server.base_url),
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "bm25.llm_judge failed for every case it applies to" in done.stderr
    assert "HTTP 503" in done.stderr
    report = read_report(report_path(done.stdout))
    detail = report.score_details[JUDGE]
    assert (detail.scored, detail.skipped, detail.failed) == (0, 1, 2)
