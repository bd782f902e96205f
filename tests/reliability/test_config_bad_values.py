"""A bad configuration fails through the real CLI before any work: exit status, a message
naming the key (and, for options that conflict, both keys), no MLflow run and no report.
Runner settings that would hold a run for minutes or swamp the machine (issue 23, item 16):
`runner.bootstrap_resamples` has an upper bound; `runner.workers` beyond the CPUs the run
may use is capped to them, and the run says so."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from heta_eval.benchmarks.sample import SAMPLE_DATA

from ..conftest import InProcessCli
from .conftest import nothing_written

JSONL = [
    "benchmark=jsonl",
    f"benchmark.documents={SAMPLE_DATA / 'documents.jsonl'}",
    f"benchmark.cases={SAMPLE_DATA / 'cases.jsonl'}",
]


def _fails(cli: InProcessCli, tmp_path: Path, args: list[str], status: int = 2) -> str:
    done = cli(*args)
    assert done.returncode == status, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert nothing_written(tmp_path / "outputs")
    return done.stderr


def test_unknown_group_option_lists_the_available_ones(cli: InProcessCli, tmp_path: Path) -> None:
    stderr = _fails(cli, tmp_path, ["recipe=bm52"])
    assert "recipe=bm52: no such recipe; did you mean recipe=bm25" in stderr
    assert "bm25_fusion" in stderr  # every option is listed


def test_a_key_the_config_lacks_gets_the_nearest_key(cli: InProcessCli, tmp_path: Path) -> None:
    stderr = _fails(cli, tmp_path, ["runner.topk=5"])
    assert "runner.topk: no such key; did you mean runner.top_k?" in stderr


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
        (
            ["runner.bootstrap_resamples=100000000"],
            "runner.bootstrap_resamples: Input should be less than or equal to 100000 "
            "(got 100000000)",
        ),
    ],
    ids=["wrong-type", "negative-top-k", "zero-top-k", "zero-k", "rate-above-one", "resamples"],
)
def test_bad_values_name_the_key(
    cli: InProcessCli, tmp_path: Path, args: list[str], message: str
) -> None:
    assert message in _fails(cli, tmp_path, args)


def test_unknown_target_shows_it_and_the_nearest_valid_names(
    cli: InProcessCli, tmp_path: Path
) -> None:
    stderr = _fails(cli, tmp_path, ["recipe.indexes.bm25._target_=heta_eval.kb.BM25Indx"])
    assert "_target_ 'heta_eval.kb.BM25Indx' not found in module heta_eval.kb" in stderr
    assert "did you mean heta_eval.kb.BM25Index" in stderr


def test_missing_benchmark_paths_name_the_key(cli: InProcessCli, tmp_path: Path) -> None:
    stderr = _fails(cli, tmp_path, ["benchmark=jsonl"])
    assert "benchmark.documents: a value is required (set benchmark.documents=...)" in stderr
    assert "benchmark.cases: a value is required (set benchmark.cases=...)" in stderr
    missing = tmp_path / "nope.jsonl"
    stderr = _fails(cli, tmp_path, [*JSONL, f"benchmark.documents={missing}"], status=1)
    assert f"benchmark.documents: file not found: {missing}" in stderr
    stderr = _fails(cli, tmp_path, ["benchmark=beir", f"benchmark.data_root={tmp_path}"], status=1)
    assert f"benchmark.data_root: {tmp_path / 'corpus.jsonl'} not found" in stderr


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
    cli: InProcessCli, tmp_path: Path, args: list[str], keys: list[str]
) -> None:
    stderr = _fails(cli, tmp_path, args)
    for key in keys:
        assert key in stderr


@pytest.mark.parametrize("key", ["recipe.query_modes", "runner.query_modes"])
def test_a_query_mode_listed_twice_is_refused_not_scored_twice(
    cli: InProcessCli, tmp_path: Path, key: str
) -> None:
    stderr = _fails(cli, tmp_path, ["tracking=none", "runner.limit=4", f"{key}=[bm25,bm25]"])
    assert f"{key}: ['bm25'] listed more than once" in stderr


def test_workers_beyond_the_cpus_are_capped_with_a_warning(cli: InProcessCli) -> None:
    cpus = len(os.sched_getaffinity(0))
    done = cli("runner.workers=10000", "runner.dry_run=true")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        f"runner.workers=10000 is more than the {cpus} CPU(s) this machine gives the run; "
        f"using {cpus} worker(s)"
    ) in done.stdout + done.stderr
    assert f"workers: {cpus}\n" in done.stdout
