"""Scaling: build, query, scoring, memory and MLflow logging against corpus and query count.

Usage: python benchmarks/scaling.py [--quick | --million | --point DOCUMENTS QUERIES]
           [--sizes] [--cached] [--json PATH]

On synthetic BEIR-layout corpora (benchmarks/synthetic.py: documents of ~150 words) the
runner evaluates the bm25 recipe (BEIR settings: top 100, nDCG@10, Recall@100, MAP@100,
MRR@10, P@10) along two axes, each point in a fresh process (stage_timings.py, so the
peak memory is that point's own) and the floor (floor.py) beside it:
- documents: 1k, 10k, 100k documents with 1,000 queries;
- queries: 100, 1k, 10k queries on 10k documents.
`--quick` uses 1k/3k/10k documents with 300 queries and 100/300/1k queries on 3k documents.
`--million` measures the one point of 1,000,000 documents and 10,000 queries (~1 GB of
corpus, written once under benchmarks/results/synthetic/; run it on an otherwise idle
machine with TMPDIR=/dev/shm); `--point D Q` any one point (e.g. 200000 1000, or 100000
10000 to check the script before the million). `--sizes` adds bytes per document;
`--cached` times a third process that loads the first run's knowledge base from a build
cache (its BM25 index memory-mapped) instead of building it.
Every point also prints both whole processes (interpreter start to exit) and their ratios
to the floor: seconds, peak memory, and whether the nDCG@10 is the floor's to the last digit.
For each point: seconds of writing documents + building, of querying, of scoring, peak
memory, and MLflow logging (start + log_report with the per-case table), and per-unit
costs (ms per 1k documents built, ms per query) whose flatness shows linear scaling.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, run_script, scratch_dir, timed, write_json
from synthetic import corpus_dir

FULL = {"documents": ([1_000, 10_000, 100_000], 1_000), "queries": (10_000, [100, 1_000, 10_000])}
QUICK = {"documents": ([1_000, 3_000, 10_000], 300), "queries": (3_000, [100, 300, 1_000])}


def points(grid: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(axes, documents, queries) of every point of the grid; a shared point once."""
    docs, fixed_queries = grid["documents"]
    fixed_docs, queries = grid["queries"]
    axes: dict[tuple[int, int], list[str]] = {}
    for d in docs:
        axes.setdefault((d, fixed_queries), []).append("documents")
    for q in queries:
        axes.setdefault((fixed_docs, q), []).append("queries")
    return [("+".join(a), d, q) for (d, q), a in axes.items()]


MILLION = (1_000_000, 10_000)
# A point's process may run for a long time at a million documents.
POINT_TIMEOUT_S = 3 * 3600


def children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(
    documents: int, queries: int, sizes: bool = False, cached: bool = False
) -> dict[str, Any]:
    """One grid point: the runner (with MLflow) and the floor, each in its own process, timed
    whole (interpreter start to exit); with `sizes`, bytes per document in the raw store, the
    index and the case results (measured after the runner's clock stops; the seconds that
    takes, `sizes_s`, are taken out of its process time). With `cached`, the runner's run
    saves its knowledge base into a build cache (the save is in its time) and a third
    process, the same run again, loads it from there (the BM25 index memory-mapped) instead
    of building it; that run also takes its query responses from the cache's response
    store, so its query seconds are not timed."""
    data = corpus_dir(documents, queries)
    extra = ["--sizes"] if sizes else []
    cache = scratch_dir("scaling-cache-") if cached else None
    if cache is not None:
        extra += ["--cache", str(cache)]
    # The runner's scratch (its object store, run and MLflow directories) is removed here,
    # after its clock stops: deleting 200k stored files is no part of the evaluation.
    scratch = scratch_dir("scaling-runner-")
    cpu = children_cpu_s()
    runner, runner_process_s = timed(
        lambda: run_script(
            "stage_timings.py",
            f"beir:{data}",
            "--repeat",
            "1",
            *extra,
            timeout=POINT_TIMEOUT_S,
            scratch=scratch,
        )
    )
    # CPU seconds of the whole process tree (its tracker worker included): less moved by
    # other work on a shared machine than its wall seconds.
    runner_cpu_s = children_cpu_s() - cpu
    shutil.rmtree(scratch, ignore_errors=True)
    runner = next(iter(runner["median"].values()))
    runner_process_s -= runner.get("sizes_s", 0.0)
    runner_cpu_s -= runner.get("sizes_s", 0.0)
    cpu = children_cpu_s()
    floor, floor_process_s = timed(
        lambda: run_script("floor.py", "--data", str(data), timeout=POINT_TIMEOUT_S)
    )
    floor_cpu_s = children_cpu_s() - cpu
    reuse: dict[str, Any] = {}
    if cache is not None:
        again, again_process_s = timed(
            lambda: run_script(
                "stage_timings.py",
                f"beir:{data}",
                "--repeat",
                "1",
                "--cache",
                str(cache),
                timeout=POINT_TIMEOUT_S,
            )
        )
        again = next(iter(again["median"].values()))
        if again["kb_from_cache"] != 1:
            raise RuntimeError("the second run did not load its knowledge base from the cache")
        reuse = {
            "cached_load_s": again["kb_load_s"],
            "cached_process_s": again_process_s,
            "cached_peak_rss_mb": again["peak_rss_mb"],
            "cached_same_ndcg": again["ndcg@10"] == runner["ndcg@10"],
        }
    build = runner["write_documents_s"] + runner["build_s"]
    memory = {}
    if sizes:
        memory = {
            "peak_rss_bytes_per_document": runner["peak_rss_mb"] * 2**20 / documents,
            "store_bytes_per_document": runner["store_bytes_per_document"],
            "index_bytes_per_document": floor["index_bytes_per_document"],
            "case_result_bytes_in_memory": runner["case_result_bytes_in_memory"],
            "case_result_json_bytes": runner["case_result_json_bytes"],
        }
    return {
        "documents": documents,
        "queries": queries,
        "write_build_s": build,
        "query_s": runner["query_s"],
        "score_s": runner["score_s"],
        "report_s": runner["report_s"],
        # Reading the benchmark, and the build + queries + scoring span with the per-case
        # work around them (the stages above do not add up to the process without them).
        "load_s": runner["load_s"],
        "build_query_score_s": runner["build_query_score_s"],
        "load_evaluate_s": runner["load_evaluate_s"],
        "peak_rss_mb": runner["peak_rss_mb"],
        "mlflow_log_s": runner["mlflow_start_s"] + runner["mlflow_log_report_s"],
        "build_s": runner["build_s"],
        "ms_build_per_1k_docs": 1000 * build / (documents / 1000),
        "ms_query_per_query": 1000 * runner["query_s"] / queries,
        "ms_score_per_query": 1000 * runner["score_s"] / queries,
        "ndcg@10": runner["ndcg@10"],
        "floor_total_s": floor["total_s"],
        "floor_index_s": floor["index_s"],
        "floor_query_s": floor["query_s"],
        "floor_peak_rss_mb": floor["peak_rss_mb"],
        "floor_ndcg@10": floor["ndcg@10"],
        "process_s": runner_process_s,  # without sizes_s
        "sizes_s": runner.get("sizes_s", 0.0),
        "floor_process_s": floor_process_s,
        "time_ratio": runner_process_s / floor_process_s,
        "process_cpu_s": runner_cpu_s,
        "floor_process_cpu_s": floor_cpu_s,
        "cpu_ratio": runner_cpu_s / floor_cpu_s,
        "memory_ratio": runner["peak_rss_mb"] / floor["peak_rss_mb"],
        "same_ndcg": runner["ndcg@10"] == floor["ndcg@10"],
        # Every digit, as text (tables round floats to 3 decimals).
        "ndcg@10_digits": repr(runner["ndcg@10"]),
        "floor_ndcg@10_digits": repr(floor["ndcg@10"]),
        "load_avg_1m": os.getloadavg()[0],
        **reuse,
        **memory,
    }


COLUMNS = [
    "documents",
    "queries",
    "write_build_s",
    "query_s",
    "score_s",
    "report_s",
    "load_s",
    "load_evaluate_s",
    "peak_rss_mb",
    "mlflow_log_s",
    "ms_build_per_1k_docs",
    "ms_query_per_query",
    "ms_score_per_query",
    "floor_total_s",
    "ndcg@10",
    "floor_ndcg@10",
]

# Whole processes (interpreter start to exit; the runner's includes MLflow logging) and their
# ratios to the floor's: the streaming build's targets are <= 1.3x time, <= 1.25x memory.
RATIO_COLUMNS = [
    "documents",
    "queries",
    "process_s",
    "floor_process_s",
    "time_ratio",
    "process_cpu_s",
    "floor_process_cpu_s",
    "cpu_ratio",
    "peak_rss_mb",
    "floor_peak_rss_mb",
    "memory_ratio",
    "ndcg@10_digits",
    "floor_ndcg@10_digits",
    "same_ndcg",
    "load_avg_1m",
]


CACHED_COLUMNS = [
    "documents",
    "build_s",
    "process_s",
    "peak_rss_mb",
    "cached_load_s",
    "cached_process_s",
    "cached_peak_rss_mb",
    "cached_same_ndcg",
]

MEMORY_COLUMNS = [
    "peak_rss_bytes_per_document",
    "store_bytes_per_document",
    "index_bytes_per_document",
    "case_result_bytes_in_memory",
    "case_result_json_bytes",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--quick", action="store_true")
    choice.add_argument("--million", action="store_true", help="1M documents, 10k queries")
    choice.add_argument("--point", type=int, nargs=2, metavar=("DOCUMENTS", "QUERIES"))
    parser.add_argument(
        "--sizes",
        action="store_true",
        help="bytes per document in the store, the index and the case results (--million: on)",
    )
    parser.add_argument(
        "--cached",
        action="store_true",
        help="also time a run that loads the saved knowledge base (BM25 memory-mapped)",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    single = MILLION if args.million else tuple(args.point) if args.point else None
    sizes = args.sizes or args.million
    grid = [("point", *single)] if single is not None else points(QUICK if args.quick else FULL)
    rows = []
    for axis, documents, queries in grid:
        print(f"scaling: {documents} documents, {queries} queries ...", flush=True)
        rows.append({"axis": axis, **measure(documents, queries, sizes, args.cached)})
    print_table(rows, ["axis", *COLUMNS])
    print_table(rows, RATIO_COLUMNS)
    if args.cached:
        print_table(rows, CACHED_COLUMNS)
    if sizes:
        print_table(rows, ["documents", "floor_peak_rss_mb", *MEMORY_COLUMNS])
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
