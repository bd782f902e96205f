"""The LLM answerer end to end, in this process: `recipe=bm25_llm` against an
OpenAI-compatible server (a thread) over real HTTP, on a UDA subset scored by UDA's own answer
and evidence metrics; the recorded answers, exported from the MLflow run, replay to the same
scores without a server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from heta_eval import EvaluationReport

from ...cli_in_process import CliResult
from ...conftest import SHARED, InProcessCli
from ...openai_server import first_passage, serve_chat

UDA = SHARED / "datasets" / "uda"


@pytest.fixture(scope="module")
def answer_server() -> Iterator[str]:
    """A chat server on a thread, answering with the first words of passage [1]."""
    if not (UDA / "extended_qa_info_bench" / "bench_nq_qa.json").is_file():
        pytest.skip(f"the UDA dataset tree is not at {UDA}")
    with serve_chat(first_passage) as state:
        yield state.base_url


def _ok(result: CliResult) -> CliResult:
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _report(run_dir: Path) -> EvaluationReport:
    return EvaluationReport.model_validate_json((run_dir / "report.json").read_text())


@pytest.mark.slow
def test_llm_answers_are_scored_by_uda_and_replay_to_the_same_scores(
    answer_server: str, cli: InProcessCli, tmp_path: Path
) -> None:
    from mlflow import MlflowClient

    out = tmp_path / "out"
    uda = ["benchmark=uda", "benchmark.subset=nq", f"benchmark.data_root={UDA}"]
    _ok(cli(
        *uda, "recipe=bm25_llm",
        f"recipe.answerer.base_url={answer_server}", "recipe.answerer.api_key_env=null",
        "recipe.answerer.model=local-test", f"recipe.answerer.cache_dir={tmp_path / 'answers'}",
        root=out,
    ))  # fmt: skip
    uri = f"sqlite:///{out / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    (tracked,) = client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])
    (run_dir,) = {p.parent for p in (out / "runs").rglob("report.json")}
    llm = _report(run_dir)
    assert not llm.failed_cases and len(llm.case_results) == 9
    for result in llm.case_results:  # the server's answers, over real HTTP
        assert result.answer and result.answer.endswith("[1]"), result.answer
    assert 0 < llm.score_summary["bm25.nq_answer_f1"] <= 1
    assert tracked.data.metrics["bm25.nq_answer_f1"] == pytest.approx(
        llm.score_summary["bm25.nq_answer_f1"]
    )

    predictions = tmp_path / "llm.jsonl"
    proc = _ok(cli(
        tracked.info.run_id, "--tracking-uri", uri, "-o", str(predictions),
        program="heta-eval-export-predictions",
    ))  # fmt: skip
    assert "9 predictions of query mode 'bm25'" in proc.stdout
    lines = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert {(p["unit_id"], p["case_id"]): p["answer"] for p in lines} == {
        (r.unit_id, r.case_id): r.answer for r in llm.case_results
    }

    # No server needed to score them again: the answerer is not part of a replay.
    replay_out = tmp_path / "replay"
    _ok(
        cli(
            *uda,
            "recipe=replay",
            f"recipe.predictions={predictions}",
            "tracking=none",
            root=replay_out,
        )
    )
    (replay_dir,) = {p.parent for p in (replay_out / "runs").rglob("report.json")}
    replayed = _report(replay_dir)
    assert not replayed.failed_cases

    def scores(report: EvaluationReport) -> dict[tuple[str, str], dict[str, float | None]]:
        return {
            (r.unit_id, r.case_id): {s.name: s.value for s in r.scores} for r in report.case_results
        }

    # Answer F1 and UDA's evidence match (which reads the retrieved chunks' text) alike.
    assert scores(replayed) == scores(llm)
    assert {k.removeprefix("replay.") for k in replayed.score_summary} == {
        k.removeprefix("bm25.") for k in llm.score_summary
    }
