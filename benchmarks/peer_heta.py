"""The peer: Heta Framework's own BenchmarkRunner, BEIR adapter and in-memory full-text recipe.

Usage: python benchmarks/peer_heta.py [--queries 30] [--data DIR] [--json PATH]

Runs `heta_framework.evaluation.BenchmarkRunner` with Heta's `BeirBenchmark` (local files,
no download) and the recipe of conf/recipe/heta_full_text.yaml (Heta's ParseDocuments ->
SplitDocuments of 1,024 characters, 50 overlap -> IndexFullText into its
InMemoryTextIndexStore; Heta's own classes, built as the heta_eval bridge builds them) on
the first `--queries` judged queries of SciFact, one query at a time, top 100.

Heta's in-memory BM25 re-tokenises every chunk for every query (~1 s a query), so the
full run is extrapolated: setup (prepare, documents, write, build: the run's wall time
minus its query latencies) + all judged queries x the mean measured query latency.
The per-query spread (min, median, max, stdev) is reported with it.

For quality on the same queries, heta_eval's runner scores the same subset in this
process with its bm25 recipe (whole documents, stemmed, stopwords removed) and set up as
Heta's recipe retrieves (1,024-character chunks with 50 overlap, plain lower-cased tokens).
The network is refused in this process (sockets may reach only localhost), and Heta's
tiktoken encodings come from a local copy (the bridge's offline tokenizer).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, SCIFACT, bm25_recipe, print_table, read_beir, scratch_dir, write_json

sys.path.insert(0, str(REPO))

# heta_eval's bm25 recipe set up as Heta's recipe retrieves: 1,024-character chunks with 50
# overlap, tokens lower-cased without stemming or stopwords (Heta's in-memory BM25).
HETA_LIKE = {
    "index": {"stemmer": None, "stopwords": None},
    "chunk_size": 1024,
    "chunk_overlap": 50,
    "unit": "chars",
}


def refuse_network() -> None:
    """Make any socket connection that is not to localhost (or a Unix socket) fail."""
    original = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and host not in ("127.0.0.1", "::1", "localhost"):
            raise ConnectionRefusedError(f"benchmark: network access to {address} refused")
        return original(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def heta_recipe(store_dir: Path) -> tuple[Any, Any]:
    """The bridge's HetaRecipe for heta_full_text.yaml and Heta's own KnowledgeRecipe of it."""
    from heta_framework.common.stores.object import LocalObjectStore as HetaObjectStore
    from omegaconf import OmegaConf

    from heta_eval.bridges.heta import HetaRecipe

    spec = OmegaConf.to_container(
        OmegaConf.load(REPO / "conf" / "recipe" / "heta_full_text.yaml"), resolve=True
    )
    assert isinstance(spec, dict)
    spec.pop("_target_")
    bridge = HetaRecipe(**spec)
    components = bridge._components()
    components["stores"]["objects"] = HetaObjectStore(str(store_dir))
    return bridge, bridge._heta_recipe(components)


class FirstCases:
    """Heta's BEIR adapter with only its first `n` cases (everything else unchanged)."""

    def __init__(self, benchmark: Any, n: int) -> None:
        self._benchmark = benchmark
        self._n = n
        self.manifest = benchmark.manifest

    def __getattr__(self, name: str) -> Any:
        return getattr(self._benchmark, name)

    async def cases(self, prepared: Any) -> AsyncIterator[Any]:
        count = 0
        async for case in self._benchmark.cases(prepared):
            if count == self._n:
                return
            count += 1
            yield case


def run_peer(data: Path, queries: int) -> dict[str, Any]:
    """Heta's runner on the first `queries` cases: wall time, latencies, nDCG@10."""
    from heta_framework.evaluation import (
        BeirBenchmark,
        BeirRetrievalMetric,
        BenchmarkRunConfig,
        BenchmarkRunner,
        BenchmarkWorkspace,
    )

    from heta_eval.bridges.heta.tokenizer import offline_tokenizer

    tmp = scratch_dir("peer-heta-")
    bridge, recipe = heta_recipe(tmp / "objects")
    benchmark = FirstCases(
        BeirBenchmark(
            dataset="scifact",
            data_root=data,
            download=False,
            evaluator_list=(BeirRetrievalMetric("ndcg", 10), BeirRetrievalMetric("recall", 100)),
        ),
        queries,
    )
    workspace = BenchmarkWorkspace(root_dir=tmp, cache_dir=tmp / "cache", output_dir=tmp / "out")
    config = BenchmarkRunConfig(top_k=100, persist_report=False, max_concurrent_queries=1)
    with offline_tokenizer(bridge.steps, allow_network=bridge.allow_network):
        started = time.perf_counter()
        result = asyncio.run(
            BenchmarkRunner().run(
                benchmark=benchmark,
                recipe=recipe,
                knowledge_base_name="peer-scifact",
                query_modes=("full_text_search",),
                workspace=workspace,
                config=config,
            )
        )
        wall = time.perf_counter() - started
    report = result.report
    failed = [r for r in report.case_results if r.error is not None]
    if failed:
        raise RuntimeError(f"Heta runner: {len(failed)} cases failed: {failed[0].error}")
    latencies = [r.latency_ms / 1000 for r in report.case_results]
    ndcg = {
        r.case_id: next(s.value for s in r.scores if s.name == "beir_ndcg@10")
        for r in report.case_results
    }
    return {
        "wall_s": wall,
        "setup_s": wall - sum(latencies),
        "latencies": latencies,
        "ndcg": ndcg,
    }


def heta_eval_ndcg(data: Path, case_ids: set[str], settings: dict[str, Any]) -> float:
    """Mean nDCG@10 of heta_eval's bm25 recipe over `case_ids` (same queries as the peer)."""
    from heta_eval import BenchmarkRunner, RunnerSettings
    from heta_eval.benchmarks import BeirBenchmark

    tmp = scratch_dir("peer-heta-eval-")
    bench = BeirBenchmark(dataset="scifact", data_root=data)
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=bm25_recipe(**settings),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(
            output_dir=tmp / "run", store_dir=tmp / "store", state_dir=tmp / "state"
        ),
    )
    report = asyncio.run(runner.run())
    values = [r.score("ndcg@10") or 0.0 for r in report.case_results if r.case_id in case_ids]
    assert len(values) == len(case_ids), "the subsets differ"
    return sum(values) / len(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=30, help="judged queries to run")
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    refuse_network()
    total_queries = len(read_beir(args.data)[2])
    peer = run_peer(args.data, args.queries)
    latencies = peer["latencies"]
    mean = statistics.fmean(latencies)
    subset = set(peer["ndcg"])
    row = {
        "queries_run": len(latencies),
        "queries_total": total_queries,
        "peer_wall_s": peer["wall_s"],
        "peer_setup_s": peer["setup_s"],
        "peer_query_mean_s": mean,
        "peer_query_median_s": statistics.median(latencies),
        "peer_query_min_s": min(latencies),
        "peer_query_max_s": max(latencies),
        "peer_query_stdev_s": statistics.stdev(latencies) if len(latencies) > 1 else 0.0,
        "peer_full_run_extrapolated_s": peer["setup_s"] + total_queries * mean,
        "peer_ndcg@10_subset": statistics.fmean(peer["ndcg"].values()),
        "heta_eval_ndcg@10_subset": heta_eval_ndcg(args.data, subset, {}),
        "heta_eval_heta_like_ndcg@10_subset": heta_eval_ndcg(args.data, subset, HETA_LIKE),
        "extrapolation": "setup_s + queries_total * peer_query_mean_s",
    }
    print_table([row], [k for k in row if k != "extrapolation"])
    write_json(args.json, row)


if __name__ == "__main__":
    main()
