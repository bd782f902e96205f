"""Time each stage of an evaluation with the bm25 recipe, through BenchmarkRunner.

Usage: python benchmarks/stage_timings.py [scifact|uda_bench|uda_table|beir:DIR ...]
           [--repeat N] [--store DIR] [--top-k K] [--chunk-size N --chunk-unit chars ...]
           [--plain-tokens] [--no-mlflow] [--sizes] [--cache DIR] [--json PATH]

For each benchmark (the real datasets in ../shared, or any BEIR-layout directory as
`beir:DIR`): loading (prepare + documents + cases), writing raw documents, building the
knowledge bases, querying, scoring, building and writing the report, the whole
evaluation, and MLflow logging into a fresh local SQLite store, as a heta-eval run logs
(`run.lifecycle`): the tracker gets ready in a thread (importing MLflow) while the benchmark
loads, the run is started before the evaluation (params) and the run directory logged after
it (`finish`: metrics, the per-case table and the files), timed apart. Medians of N repeats
in this process. bm25s is imported before the clock starts (as the floor imports its libraries);
with `--store` the object store is shared between repeats, as in a sweep (documents are
compared, not written again).
`--cache DIR` keeps a build cache across runs (a later run loads the knowledge base, its BM25
index memory-mapped, instead of building it). `--sizes` adds, after the clock stops, the
bytes per document in the raw store and per case result (in memory and as JSON).
Prints a table and writes benchmarks/results/stage_timings.json (or `--json`).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    DATA,
    REPO,
    RESULTS,
    SCIFACT,
    bm25_recipe,
    median_rows,
    peak_rss_mb,
    scratch_dir,
    write_json,
)

sys.path.insert(0, str(REPO))

import bm25s  # noqa: F401  (imported before timing, like the floor's libraries)

from heta_eval import BenchmarkRunner, RunnerSettings
from heta_eval.async_run import run_sync
from heta_eval.benchmarks import BeirBenchmark, UdaBenchmark

BENCHMARKS: dict[str, Any] = {
    "scifact": lambda: BeirBenchmark(dataset="scifact", data_root=SCIFACT),
    "uda_bench": lambda: UdaBenchmark(source="bench", data_root=DATA / "uda"),
    "uda_table": lambda: UdaBenchmark(source="qa_table", data_root=DATA / "uda"),
}


def make_benchmark(name: str) -> Any:
    """A named benchmark of BENCHMARKS, or `beir:DIR` for any BEIR-layout directory."""
    if name.startswith("beir:"):
        return BeirBenchmark(dataset=Path(name[5:]).name, data_root=Path(name[5:]))
    return BENCHMARKS[name]()


def one_run(
    name: str,
    store: Path | None,
    top_k: int | None,
    recipe: dict[str, Any],
    mlflow: bool,
    measure_sizes: bool = False,
    cache: Path | None = None,
) -> tuple[dict[str, float], Any]:
    """Stage seconds and scores of one evaluation, and its report."""
    tmp = scratch_dir("stage-timings-")
    built_recipe = bm25_recipe(**recipe)
    tracking = connect_tracking(tmp) if mlflow else None
    bench = make_benchmark(name)
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=built_recipe,
        evaluators=bench.evaluators(),
        settings=RunnerSettings(
            output_dir=tmp / "run",
            store_dir=store or tmp / "store",
            cache="readwrite" if cache is not None else "off",
            cache_dir=cache or tmp / "cache",
            workspace_dir=tmp / "data",
            state_dir=tmp / "state",
            top_k=top_k,
            offline=True,
        ),
    )

    async def go() -> tuple[Any, float, float, dict[str, float]]:
        t0 = time.perf_counter()
        contents = await runner.load()
        t1 = time.perf_counter()
        started = start_tracking(tracking, tmp, built_recipe.manifest()) if tracking else {}
        t2 = time.perf_counter()
        report = await runner.evaluate(contents)
        return report, t1 - t0, time.perf_counter() - t2, started

    report, load, evaluate, started = run_sync(go())
    timings = report.run.timings_seconds
    row: dict[str, float] = {
        "knowledge_bases": float(len(report.knowledge_base_manifests)),
        "chunks": float(sum(m.counts.get("chunks", 0) for m in report.knowledge_base_manifests)),
        "cases": float(len(report.case_results)),
        "load_s": load,
        "write_documents_s": timings["write_documents"],
        # Seconds the writer process spent writing, beside the build (0: written inline).
        "write_in_background_s": timings.get("write_documents_in_background", 0.0),
        "build_s": timings["build"],
        # Knowledge bases loaded from the build cache (--cache) instead of built, and the
        # seconds that took (`build_s` then repeats the seconds of the build that saved them).
        "kb_from_cache": float(
            sum(m.cache_status == "hit" for m in report.knowledge_base_manifests)
        ),
        "kb_load_s": sum(
            m.load_seconds or 0.0
            for m in report.knowledge_base_manifests
            if m.cache_status == "hit"
        ),
        "query_s": timings["query"],
        "score_s": timings["score"],
        # Build, queries and scoring with what the runner does per case around them
        # (making each case result), as one span.
        "build_query_score_s": timings["build_query_score"],
        # Summaries, the report record and report.json: what evaluate does after scoring.
        "report_s": evaluate - timings["write_documents"] - timings["build_query_score"],
        "evaluate_s": evaluate,
        "load_evaluate_s": load + evaluate,
        **{k.split(".", 1)[1]: v for k, v in report.score_summary.items()},
    }
    if tracking is not None:
        row.update(started)
        row.update(log_to_mlflow(tracking[0], report))
    row["peak_rss_mb"] = peak_rss_mb()
    if measure_sizes:
        documents = report.run.document_keys.stored
        row["documents"] = float(documents)
        started = time.perf_counter()
        row.update(sizes(report, store or tmp / "store", documents))
        # Walking a million stored files is the measurement's cost, not the run's: the
        # whole-process time in scaling.py leaves it out.
        row["sizes_s"] = time.perf_counter() - started
    return row, report


def deep_size(obj: Any, seen: set[int] | None = None) -> int:
    """Bytes of `obj` and everything it references (records, containers, strings), each
    object counted once."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, list | tuple | set | frozenset):
        size += sum(deep_size(v, seen) for v in obj)
    elif hasattr(obj, "__dict__"):
        size += deep_size(vars(obj), seen)
    return size


def sizes(report: Any, store: Path, documents: int) -> dict[str, float]:
    """Bytes per document in the raw store (on disk) and per case result (in memory, from
    a sample of 200; and as report JSON). Measured after the timed run."""
    stored = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
    results = report.case_results
    sample = results[:: max(1, len(results) // 200)]
    return {
        "store_bytes_per_document": stored / max(documents, 1),
        "case_result_bytes_in_memory": sum(deep_size(r) for r in sample) / len(sample),
        "case_result_json_bytes": len(report.model_dump_json()) / len(results),
    }


def connect_tracking(tmp: Path) -> tuple[Any, threading.Thread]:
    """The run's MLflow tracker for a fresh local SQLite store, getting ready in a thread
    (importing MLflow) while this process loads the benchmark, as a heta-eval run's does."""
    from heta_eval.tracking import MlflowTracker

    tracker = MlflowTracker(root=tmp / "mlflow")
    connecting = threading.Thread(target=tracker.connect, daemon=True)
    connecting.start()
    return tracker, connecting


def start_tracking(tracking: tuple[Any, threading.Thread], tmp: Path, recipe: Any) -> dict:
    """Start the MLflow run before the evaluation (the store is created, the params logged);
    the seconds that took, with the wait for the tracker to be ready."""
    tracker, connecting = tracking
    t0 = time.perf_counter()
    connecting.join()
    tracker.start(run_name="stage-timings", config={"recipe": recipe}, tags={}, run_dir=tmp / "run")
    return {"mlflow_start_s": time.perf_counter() - t0}


def log_to_mlflow(tracker: Any, report: Any) -> dict[str, float]:
    """Seconds to log the run directory (the report and the files beside it) and end."""
    t0 = time.perf_counter()
    tracker.finish(report)
    if tracker.offline:
        raise SystemExit(f"MLflow logging failed: {tracker.describe()}")
    return {"mlflow_log_report_s": time.perf_counter() - t0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "benchmarks", nargs="*", help=f"any of {list(BENCHMARKS)} or beir:DIR (default: all)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--store", type=Path, default=None, help="object store kept across runs")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="build cache kept across runs (a later run loads the knowledge base from it)",
    )
    parser.add_argument("--top-k", type=int, default=None, help="default: the benchmark's")
    parser.add_argument("--chunk-size", type=int, default=None, help="default: whole documents")
    parser.add_argument("--chunk-overlap", type=int, default=0)
    parser.add_argument("--chunk-unit", default="words", choices=["words", "tokens", "chars"])
    parser.add_argument(
        "--plain-tokens", action="store_true", help="BM25 without stemming and stopwords"
    )
    parser.add_argument("--no-mlflow", action="store_true", help="skip the MLflow logging")
    parser.add_argument(
        "--sizes", action="store_true", help="bytes per document stored and per case result"
    )
    parser.add_argument("--json", type=Path, default=RESULTS / "stage_timings.json")
    args = parser.parse_args()
    names = args.benchmarks or list(BENCHMARKS)
    unknown = sorted(n for n in names if n not in BENCHMARKS and not n.startswith("beir:"))
    if unknown:
        parser.error(f"unknown benchmarks {unknown}; choose from {list(BENCHMARKS)} or beir:DIR")
    recipe = {
        "chunk_size": args.chunk_size,
        "chunk_overlap": args.chunk_overlap,
        "unit": args.chunk_unit,
        "index": {"stemmer": None, "stopwords": None} if args.plain_tokens else {},
    }
    results = {}
    for name in names:
        runs = [
            one_run(
                name, args.store, args.top_k, recipe, not args.no_mlflow, args.sizes, args.cache
            )[0]
            for _ in range(args.repeat)
        ]
        results[name] = median_rows(runs)
    keys = list(dict.fromkeys(k for row in results.values() for k in row))
    width = max(map(len, keys))
    print(f"{'':<{width}}  " + "  ".join(f"{n[-12:]:>12}" for n in results))
    for key in keys:
        cells = "  ".join(
            f"{results[n][key]:>12.4f}" if key in results[n] else f"{'':>12}" for n in results
        )
        print(f"{key:<{width}}  {cells}")
    write_json(args.json, {"repeat": args.repeat, "median": results})
    print(f"written {args.json}")


if __name__ == "__main__":
    main()
