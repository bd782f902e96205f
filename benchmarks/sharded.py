"""Sharded corpora on Ray: build and query costs of `runner.shards=N runner.executor=ray`
against the unsharded run, per document, on a synthetic corpus.

Usage: python benchmarks/sharded.py [--point DOCUMENTS QUERIES] [--shards 2] [--sharded-only]
           [--json PATH]

For one point (default 20,000 documents, 1,000 queries; benchmarks/synthetic.py, written
once) the runner evaluates the bm25 recipe with BEIR settings (top 100) twice, each in a
fresh process: unsharded (in-process), then in N shards on a private local Ray cluster of N
CPUs (started before the run and timed apart). Build cache off, no tracking. Printed per run:
seconds of loading the benchmark, writing documents, building, and querying + scoring
(wall), nDCG@10, the run process's peak RSS and each shard actor's (VmHWM, read from /proc
while it lives), and the per-document costs the docs' 10M projection uses.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import peak_rss_mb, print_table, run_script, scratch_dir, write_json
from synthetic import corpus_dir

SHARD_PROCESS = "ray::CorpusShard"


class ShardMemory:
    """Peak resident memory (VmHWM) of every live shard actor process, read every 0.2 s."""

    def __init__(self) -> None:
        self.peaks: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> ShardMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    if not (entry / "cmdline").read_bytes().startswith(SHARD_PROCESS.encode()):
                        continue
                    for line in (entry / "status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            mb = int(line.split()[1]) / 1024
                            pid = int(entry.name)
                            self.peaks[pid] = max(self.peaks.get(pid, 0.0), mb)
                except OSError:
                    continue


def child(data: Path, shards: int) -> dict[str, Any]:
    """One run in this process: unsharded (`shards` 1) or on a private Ray cluster."""
    from _common import bm25_recipe

    from heta_eval import BenchmarkRunner, RunnerSettings
    from heta_eval.benchmarks.beir import BeirBenchmark

    root = scratch_dir("heta-sharded-")
    values: dict[str, Any] = {}
    cluster_s = 0.0
    if shards > 1:
        import ray

        started = time.perf_counter()
        ray.init(
            num_cpus=shards,
            include_dashboard=False,
            object_store_memory=256 * 2**20,
            log_to_driver=False,
        )
        cluster_s = time.perf_counter() - started
        values = {"shards": shards, "executor": "ray"}
    settings = RunnerSettings(
        output_dir=root / "run",
        store_dir=root / "store",
        workspace_dir=root / "data",
        state_dir=root / "state",
        cache="off",
        offline=True,
        progress="off",
        **values,
    )
    benchmark = BeirBenchmark(dataset="synthetic", data_root=data)
    runner = BenchmarkRunner(
        benchmark=benchmark,
        recipe=bm25_recipe(),
        evaluators=benchmark.evaluators(),
        settings=settings,
    )
    with ShardMemory() as memory:
        started = time.perf_counter()
        loaded = asyncio.run(runner.load())
        load_s = time.perf_counter() - started
        report = asyncio.run(runner.evaluate(loaded))
    timings = report.run.timings_seconds
    documents = len(loaded.contents.documents)
    queries = report.run.cases.evaluated
    build = timings["build"]
    query_score = timings["build_query_score"] - build
    shard_peaks = sorted(memory.peaks.values(), reverse=True)
    return {
        "shards": shards,
        "documents": documents,
        "queries": queries,
        "cluster_start_s": cluster_s,
        "load_s": load_s,
        "write_documents_s": timings["write_documents"],
        "build_s": build,
        "query_score_s": query_score,
        "ndcg@10": report.score_summary["bm25.ndcg@10"],
        "run_peak_rss_mb": peak_rss_mb(),
        "shard_peak_rss_mb": shard_peaks[0] if shard_peaks else None,
        "shard_processes": len(shard_peaks),
        "ms_build_per_1k_docs": 1000 * build / (documents / 1000),
        "ms_query_score_per_query": 1000 * query_score / queries,
        "run_kb_per_document": peak_rss_mb() * 1024 / documents,
        "shard_kb_per_shard_document": (
            shard_peaks[0] * 1024 / (documents / shards) if shard_peaks else None
        ),
        "loadavg": os.getloadavg()[0],
    }


COLUMNS = [
    "shards",
    "documents",
    "queries",
    "cluster_start_s",
    "load_s",
    "write_documents_s",
    "build_s",
    "query_score_s",
    "ndcg@10",
    "run_peak_rss_mb",
    "shard_peak_rss_mb",
    "ms_build_per_1k_docs",
    "ms_query_score_per_query",
    "run_kb_per_document",
    "shard_kb_per_shard_document",
    "loadavg",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", type=int, nargs=2, default=(20_000, 1_000))
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument(
        "--sharded-only", action="store_true", help="skip the unsharded run (e.g. at 1M)"
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        write_json(args.json, child(args.child, args.shards))
        return
    documents, queries = args.point
    data = corpus_dir(documents, queries)
    rows = []
    for shards in (args.shards,) if args.sharded_only else (1, args.shards):
        print(f"sharded: {documents} documents, {queries} queries, {shards} shard(s) ...")
        rows.append(
            run_script(
                "sharded.py", "--child", str(data), "--shards", str(shards), timeout=4 * 3600
            )
        )
    print_table(rows, COLUMNS)
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
