"""runner.shards: a corpus split into shards, each built and queried on its own (Ray actors,
or one after another in this process), equals the unsharded run: the same BM25 scores to
the last bit, the same chunks (up to equal scores at the cut), the same metrics. The Ray
tests share one local cluster (2 CPUs) started for the module."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from heta_eval import BenchmarkRunner, RunnerSettings
from heta_eval.benchmarks import SampleBenchmark
from heta_eval.benchmarks.beir import BeirBenchmark
from heta_eval.kb import KnowledgeRecipe
from heta_eval.kb.documents import Chunk
from heta_eval.kb.index.bm25 import BM25Index
from heta_eval.kb.index.sharded_bm25 import (
    CorpusTerms,
    QueryTokenizer,
    ShardBm25,
    ShardingError,
    merge_hits,
)
from heta_eval.records import EvaluationReport
from heta_eval.run.shards import check_shard_settings

from .conftest import REPO, CliRunner, load_recipe, local_ray_cluster

sys.path.insert(0, str(REPO / "benchmarks"))
from synthetic import write_corpus

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::ResourceWarning"
)


@pytest.fixture(scope="module")
def synthetic_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic BEIR-layout corpus (benchmarks/synthetic.py): 2,000 documents, 200 queries."""
    return write_corpus(tmp_path_factory.mktemp("synthetic"), 2000, 200, seed=7)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray cluster for the module (2 CPUs: one per shard actor)."""
    pytest.importorskip("ray")
    with local_ray_cluster() as address:
        yield address


def _evaluate(
    benchmark: Any, tmp_path: Path, name: str, recipe: KnowledgeRecipe | None = None, **values: Any
) -> EvaluationReport:
    settings = RunnerSettings(
        output_dir=tmp_path / name / "run",
        store_dir=tmp_path / name / "store",
        workspace_dir=tmp_path / name / "data",
        state_dir=tmp_path / name / "state",
        offline=True,
        progress="off",
        **values,
    )
    runner = BenchmarkRunner(
        benchmark=benchmark,
        recipe=recipe or load_recipe(),
        evaluators=benchmark.evaluators(),
        settings=settings,
    )
    return asyncio.run(runner.run())


def _same_ranking(expected: list[tuple[str, float]], got: list[tuple[str, float]]) -> None:
    """The same scores, by the same chunks; chunks may differ only among equal scores at the
    cut (which of several equal scores bm25s keeps is numpy's partition order)."""
    assert len(got) == len(expected)
    assert np.allclose(sorted(s for _, s in got), sorted(s for _, s in expected), rtol=0, atol=1e-9)
    mine, theirs = dict(got), dict(expected)
    for chunk in mine.keys() & theirs.keys():
        assert abs(mine[chunk] - theirs[chunk]) <= 1e-9, chunk
    cut = min((s for _, s in expected), default=0.0)
    assert all(theirs[c] == cut for c in theirs.keys() - mine.keys())
    assert all(mine[c] == cut for c in mine.keys() - theirs.keys())


def _assert_equal_runs(expected: EvaluationReport, got: EvaluationReport) -> None:
    assert got.score_summary == expected.score_summary
    assert len(got.case_results) == len(expected.case_results)
    for mine, theirs in zip(got.case_results, expected.case_results, strict=True):
        assert (mine.case_id, mine.query_mode, mine.error) == (
            theirs.case_id,
            theirs.query_mode,
            None,
        )
        assert [(s.name, s.value) for s in mine.scores] == [
            (s.name, s.value) for s in theirs.scores
        ]
        _same_ranking(
            [(i.id, i.score) for i in theirs.retrieved], [(i.id, i.score) for i in mine.retrieved]
        )
        # The same provenance for the chunks both return.
        by_id = {i.id: i for i in theirs.retrieved}
        for item in mine.retrieved:
            if item.id in by_id:
                assert item == by_id[item.id]
    (kb,) = got.knowledge_base_manifests
    (unsharded,) = expected.knowledge_base_manifests
    assert kb.counts == {**unsharded.counts, "shards": kb.counts["shards"]}
    assert kb.source_keys == unsharded.source_keys
    assert kb.document_errors == unsharded.document_errors
    assert kb.cache_key is None  # sharded knowledge bases are not cached


@pytest.mark.slow
def test_shards_score_bit_for_bit_as_one_bm25s_index(synthetic_dir: Path) -> None:
    rows = [json.loads(line) for line in (synthetic_dir / "corpus.jsonl").open()]
    texts = [f"{r['title']}\n\n{r['text']}" for r in rows]
    texts[10] = "the of and"  # no term after stopwords: bm25s's empty token scores it
    queries = [json.loads(line)["text"] for line in (synthetic_dir / "queries.jsonl").open()]
    queries += ["the and", "qqqzzz", "qqqzzz " + queries[0]]  # no known term, then some
    chunks = [
        Chunk(chunk_id=f"c{i}", chunk_index=0, document_id=f"d{i}", source_key=f"k{i}",
              text=t, start_char=0, end_char=len(t))
        for i, t in enumerate(texts)
    ]  # fmt: skip
    bounds = [0, 500, 1300, len(texts)]  # three shards of unequal sizes
    for method in ("lucene", "robertson", "atire"):
        builder = BM25Index(method=method)
        expected = builder.build(chunks).search(queries, 50)
        shards = [ShardBm25(builder) for _ in range(3)]
        terms = [
            s.tokenize(texts[a:b]) for s, a, b in zip(shards, bounds, bounds[1:], strict=False)
        ]
        corpus = CorpusTerms.merge(terms)
        assert corpus.chunks == len(texts)
        for shard, shard_terms in zip(shards, terms, strict=True):
            shard.index(
                corpus.frequencies_of(shard_terms.terms), corpus.chunks, corpus.average_length
            )
        tokenizer = QueryTokenizer(builder)
        query_terms = [tokenizer.terms(q, corpus) for q in queries]
        found = [s.search(query_terms, 50) for s in shards]
        for i, hits in enumerate(expected):
            merged = merge_hits(
                [[(a + p, s, None) for p, s in f[i]] for a, f in zip(bounds, found, strict=False)],
                50,
            )
            got = [(p, s) for p, s, _ in merged]
            _same_ranking(hits, got)
            scores = dict(hits)
            assert all(scores[p] == s for p, s in got if p in scores)  # bit for bit
        # A query without a known term scores only the chunk without terms (bm25s's empty
        # token), in the sharded index too; one with a known term does not.
        assert [p for p, _ in expected[-3]] == [p for p, _ in expected[-2]] == [10]
        assert expected[-1] and 10 not in dict(expected[-1])


def test_sharded_run_in_this_process_equals_the_unsharded_run(tmp_path: Path) -> None:
    benchmark = SampleBenchmark()
    expected = _evaluate(benchmark, tmp_path, "one")
    got = _evaluate(benchmark, tmp_path, "three", shards=3)
    _assert_equal_runs(expected, got)
    assert got.knowledge_base_manifests[0].counts["shards"] == 3


@pytest.mark.slow
def test_sharded_run_on_ray_equals_the_unsharded_run_on_a_synthetic_corpus(
    cluster: str, tmp_path: Path, synthetic_dir: Path
) -> None:
    benchmark = BeirBenchmark(dataset="synthetic", data_root=synthetic_dir)
    expected = _evaluate(benchmark, tmp_path, "one", top_k=20)
    got = _evaluate(benchmark, tmp_path, "ray", top_k=20, shards=2, executor="ray")
    _assert_equal_runs(expected, got)
    assert got.knowledge_base_manifests[0].counts["chunks"] == 2000


def test_more_shards_than_the_cluster_has_cpus_for_fail_the_build_not_hang(
    cluster: str, tmp_path: Path
) -> None:
    report = _evaluate(SampleBenchmark(), tmp_path, "three", shards=3, executor="ray")
    errors = {(r.error.stage, r.error.message) for r in report.case_results if r.error}
    assert len(report.case_results) == 48 and errors == {
        (
            "build",
            "runner.shards=3 with runner.ray_num_cpus=1.0 needs 3 CPUs, and the Ray cluster "
            "has 2: the shards' actors would wait for CPUs forever; use fewer shards, a "
            "smaller ray_num_cpus or a bigger cluster",
        )
    }


@pytest.mark.slow
def test_sharded_scifact_on_ray_equals_the_unsharded_run(
    cluster: str, tmp_path: Path, scifact_dir: Path
) -> None:
    benchmark = BeirBenchmark(dataset="scifact", data_root=scifact_dir)
    expected = _evaluate(benchmark, tmp_path, "one")
    got = _evaluate(benchmark, tmp_path, "ray", shards=2, executor="ray")
    _assert_equal_runs(expected, got)
    assert round(got.score_summary["bm25.ndcg@10"], 4) == 0.6863


@pytest.mark.slow
def test_recipes_that_cannot_be_sharded_exactly_are_refused(run_cli: CliRunner) -> None:
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

    proc = run_cli("recipe=hybrid", "runner.shards=2", "runner.executor=ray")
    assert proc.returncode == 2, proc.stderr
    assert f"runner.shards: {dense} (heta_eval.kb.BM25Index) can be split" in proc.stderr
    proc = run_cli("runner.shards=0")
    assert proc.returncode == 2, proc.stderr
    assert "runner.shards: Input should be greater than or equal to 1" in proc.stderr


@pytest.mark.slow
def test_one_override_shards_a_cli_run_on_a_private_ray_cluster(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    proc = run_cli("runner.shards=2", "runner.executor=ray", "tracking=none", timeout=600)
    assert proc.returncode == 0, proc.stderr
    (report_path,) = (tmp_path / "outputs" / "runs").rglob("report.json")
    report = EvaluationReport.model_validate_json(report_path.read_text())
    expected = _evaluate(SampleBenchmark(), tmp_path, "one")
    _assert_equal_runs(expected, report)
