"""A bad configuration fails through the real CLI before any work: exit status, a message
naming the key (and, for options that conflict, both keys), no MLflow run and no report."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval.benchmarks.sample import SAMPLE_DATA

from ..conftest import CliRunner
from .conftest import nothing_written

JSONL = [
    "benchmark=jsonl",
    f"benchmark.documents={SAMPLE_DATA / 'documents.jsonl'}",
    f"benchmark.cases={SAMPLE_DATA / 'cases.jsonl'}",
]


def _fails(run_cli: CliRunner, tmp_path: Path, args: list[str], status: int = 2) -> str:
    proc = run_cli(*args)
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert nothing_written(tmp_path / "outputs")
    return proc.stderr


def test_unknown_group_option_lists_the_available_ones(run_cli: CliRunner, tmp_path: Path) -> None:
    proc = run_cli("recipe=bm52")
    assert proc.returncode == 2
    assert "recipe=bm52: no such recipe; did you mean recipe=bm25" in proc.stderr
    assert "bm25_fusion" in proc.stderr  # every option is listed
    assert nothing_written(tmp_path / "outputs")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["runner.top_k=ten"], "runner.top_k: Input should be a valid integer"),
        (["runner.top_k=-1"], "runner.top_k: Input should be greater than 0 (got -1)"),
        (["runner.top_k=0"], "runner.top_k: Input should be greater than 0 (got 0)"),
        (
            ["evaluator=retrieval", "evaluator.extra.0.ks=[0,10]"],
            "evaluator.extra[0]: cannot create heta_eval.evaluators.retrieval_metrics: "
            "k must be a number within [1, 100000], got 0",
        ),
        (["runner.max_failure_rate=1.5"], "runner.max_failure_rate: Input should be less"),
    ],
    ids=["wrong-type", "negative-top-k", "zero-top-k", "zero-k", "rate-above-one"],
)
def test_bad_values_name_the_key(
    run_cli: CliRunner, tmp_path: Path, args: list[str], message: str
) -> None:
    assert message in _fails(run_cli, tmp_path, args)


def test_unknown_target_shows_it_and_the_nearest_valid_names(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    stderr = _fails(run_cli, tmp_path, ["recipe.indexes.bm25._target_=heta_eval.kb.BM25Indx"])
    assert "_target_ 'heta_eval.kb.BM25Indx' not found in module heta_eval.kb" in stderr
    assert "did you mean heta_eval.kb.BM25Index" in stderr


@pytest.mark.slow
def test_missing_benchmark_paths_name_the_key(run_cli: CliRunner, tmp_path: Path) -> None:
    stderr = _fails(run_cli, tmp_path, ["benchmark=jsonl"])
    assert "benchmark.documents: a value is required (set benchmark.documents=...)" in stderr
    assert "benchmark.cases: a value is required (set benchmark.cases=...)" in stderr
    missing = tmp_path / "nope.jsonl"
    stderr = _fails(run_cli, tmp_path, [*JSONL, f"benchmark.documents={missing}"], status=1)
    assert f"benchmark.documents: file not found: {missing}" in stderr
    stderr = _fails(
        run_cli, tmp_path, ["benchmark=beir", f"benchmark.data_root={tmp_path}"], status=1
    )
    assert f"benchmark.data_root: {tmp_path / 'corpus.jsonl'} not found" in stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "keys"),
    [
        (
            ["runner.query_modes=[dense]"],
            ["runner.query_modes: ['dense'] are not offered", "recipe.query_modes"],
        ),
        (
            ["recipe=bm25_fusion", "recipe.fusions.fusion.modes=[bm25,dense]"],
            ["fusions.fusion.modes names modes that are not in indexes: ['dense']", "indexes:"],
        ),
        (
            ["recipe.chunk_size=8", "recipe.chunk_overlap=8"],
            ["chunk_overlap (8) must be smaller than chunk_size (8)"],
        ),
        (
            ["evaluator.use_benchmark_defaults=false"],
            ["evaluator.use_benchmark_defaults is false", "evaluator.extra adds none"],
        ),
        (
            ["optimized_metric=bm25.ndcg@1000"],
            ["optimized_metric: 'bm25.ndcg@1000' is not a score", "bm25.evidence_recall@1"],
        ),
    ],
    ids=["modes-vs-recipe", "fusion-vs-indexes", "overlap-vs-size", "no-evaluators", "metric"],
)
def test_conflicting_options_are_refused_naming_both_keys(
    run_cli: CliRunner, tmp_path: Path, args: list[str], keys: list[str]
) -> None:
    stderr = _fails(run_cli, tmp_path, args)
    for key in keys:
        assert key in stderr


def test_a_search_without_optimized_metric_stops_before_the_first_trial(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    # It used to run every trial, then fail in Optuna with "No trials are completed yet".
    proc = run_cli(
        "-m", "hparams_search=bm25_optuna", "optimized_metric=null", "hydra.sweeper.n_trials=2"
    )
    assert proc.returncode != 0
    assert "optimized_metric: a value is required by the hyperparameter search" in proc.stderr
    assert not list((tmp_path / "outputs").rglob("report.json"))
    assert "No trials are completed" not in proc.stderr
