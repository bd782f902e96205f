"""Checked before any work: recipe components' arguments, `runner.seed`, the API keys of a
recipe's endpoints; and a run whose cases all failed is a failed run, saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import mlflow_runs, nothing_written, read_report
from .processes import run_cli


@pytest.mark.slow
@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("+recipe.chunker.bogus=1", "recipe.chunker.bogus: heta_eval.kb.FixedSizeChunker takes"),
        ("+recipe.indexes.bm25.k=2", "did you mean recipe.indexes.bm25.k1?"),
        ("recipe.indexes.bm25.k1=-1", "recipe.indexes.bm25: cannot create heta_eval.kb.BM25Index"),
        (
            "recipe.indexes.bm25.method=nonsense",
            "recipe.indexes.bm25.method: 'nonsense' is not accepted",
        ),
        ("runner.seed=-1", "runner.seed: Input should be greater than or equal to 0"),
    ],
)
def test_bad_component_arguments_exit_2_before_any_work(
    tmp_path: Path, override: str, expected: str
) -> None:
    root = tmp_path / "outputs"
    done = run_cli(root, tmp_path, override, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
    assert nothing_written(root)


@pytest.mark.slow
def test_an_endpoint_without_its_key_exits_2_and_offline_recipes_need_none(
    tmp_path: Path,
) -> None:
    root = tmp_path / "outputs"
    env = {"OPENAI_API_KEY": ""}  # unset for the run, whatever the machine has
    done = run_cli(root, tmp_path, "recipe=bm25_llm", "evaluator=with_answers", **env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "recipe.answerer.api_key_env: environment variable OPENAI_API_KEY is not set" in (
        done.stderr
    )
    assert nothing_written(root)
    # A recipe without endpoints, an endpoint without authentication: no key needed.
    for args in (
        ("evaluator=with_answers",),
        ("recipe=bm25_llm", "recipe.answerer.api_key_env=null", "runner.dry_run=true"),
    ):
        ok = run_cli(root, tmp_path, "runner.limit=2", "tracking=none", *args, **env)
        assert ok.returncode == 0, ok.stdout + ok.stderr


@pytest.mark.slow
def test_a_run_whose_cases_all_failed_exits_1_whatever_max_failure_rate_says(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the build cache's directory should be")
    root = tmp_path / "outputs"
    done = run_cli(
        root,
        tmp_path,
        "runner.limit=4",
        f"runner.cache_dir={blocker}/cache",
        "runner.max_failure_rate=1",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "4 of 4 case results failed (all of them: 4 at build)" in done.stderr
    # The most frequent reason, with its count, on the terminal; the summary still printed.
    assert "most frequent failure reasons:\n  4x build: " in done.stdout
    assert "4x build: " in done.stderr and "Traceback" not in done.stderr
    report = read_report(done.report_path)  # kept
    assert len(report.failed_cases) == 4
    (run,) = mlflow_runs(root)
    assert run.info.status == "FAILED"


@pytest.mark.slow
def test_metrics_without_a_score_say_why_on_the_terminal(tmp_path: Path) -> None:
    done = run_cli(
        tmp_path / "outputs", tmp_path, "evaluator=with_answers", "runner.limit=3", "tracking=none"
    )
    assert done.returncode == 0, done.stderr
    assert "bm25.answer_f1: no score, skipped: 3x no answer generated" in done.stdout
