"""runner.shards in this process: a corpus split into shards, each built and queried on its
own one after another, equals the unsharded run (the same BM25 scores, the same chunks up to
equal scores at the cut, the same metrics); recipes that cannot be sharded exactly are
refused before any work. The shards on Ray actors are in tests/e2e/run/test_ray.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval import RunnerSettings
from heta_eval.benchmarks import SampleBenchmark
from heta_eval.kb.index.sharded_bm25 import ShardingError
from heta_eval.run.shards import check_shard_settings

from ...conftest import InProcessCli, load_recipe
from ...sharded_runs import assert_equal_runs, evaluate


def test_sharded_run_in_this_process_equals_the_unsharded_run(tmp_path: Path) -> None:
    benchmark = SampleBenchmark()
    expected = evaluate(benchmark, tmp_path, "one")
    got = evaluate(benchmark, tmp_path, "three", shards=3)
    assert_equal_runs(expected, got)
    assert got.knowledge_base_manifests[0].counts["shards"] == 3


def test_recipes_that_cannot_be_sharded_exactly_are_refused(cli: InProcessCli) -> None:
    sharded = RunnerSettings(shards=2, executor="ray")
    dense = "recipe.indexes.dense is heta_eval.kb.index.dense.DenseIndex; only BM25 indexes"
    with pytest.raises(ShardingError, match=dense):
        check_shard_settings(sharded, load_recipe("dense"))
    fused = load_recipe(
        fusions={"rrf": {"_target_": "heta_eval.kb.ReciprocalRankFusion", "modes": ["bm25"]}},
        query_modes=["bm25", "rrf"],
    )
    with pytest.raises(ShardingError, match=r"has fusions \['rrf'\]"):
        check_shard_settings(sharded, fused)
    bm25l = load_recipe(indexes={"bm25": {"_target_": "heta_eval.kb.BM25Index", "method": "bm25l"}})
    with pytest.raises(ShardingError, match=r"method=bm25l; sharding supports the BM25 "
                       r"methods robertson, lucene, atire"):  # fmt: skip
        check_shard_settings(sharded, bm25l)
    check_shard_settings(RunnerSettings(shards=1), load_recipe("dense"))  # 1: no sharding

    proc = cli("recipe=hybrid", "runner.shards=2", "runner.executor=ray")
    assert proc.returncode == 2, proc.stderr
    assert f"runner.shards: {dense} (heta_eval.kb.BM25Index) can be split" in proc.stderr
    proc = cli("runner.shards=0")
    assert proc.returncode == 2, proc.stderr
    assert "runner.shards: Input should be greater than or equal to 1" in proc.stderr
