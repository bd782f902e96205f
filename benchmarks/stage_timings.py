"""Time each stage of an evaluation with the bm25 recipe on the real datasets in ../shared.

Usage: python benchmarks/stage_timings.py [scifact|uda_bench|uda_table ...] [--repeat N]

For each benchmark: loading (prepare + documents + cases), writing raw documents, building
the knowledge bases, querying, scoring, the whole evaluation, and MLflow logging (start +
report) into a fresh SQLite store — medians of N repeats. Prints a table and writes
benchmarks/results/stage_timings.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "datasets"
sys.path.insert(0, str(REPO))

from heta_eval import BenchmarkRunner, KnowledgeRecipe, RunnerSettings  # noqa: E402
from heta_eval.benchmarks import BeirBenchmark, UdaBenchmark  # noqa: E402
from heta_eval.tracking import MlflowTracker  # noqa: E402

BENCHMARKS: dict[str, Any] = {
    "scifact": lambda: BeirBenchmark(dataset="scifact", data_root=DATA / "beir" / "scifact"),
    "uda_bench": lambda: UdaBenchmark(source="bench", data_root=DATA / "uda"),
    "uda_table": lambda: UdaBenchmark(source="qa_table", data_root=DATA / "uda"),
}


def bm25_recipe() -> KnowledgeRecipe:
    import yaml

    spec = yaml.safe_load((REPO / "conf" / "recipe" / "bm25.yaml").read_text())
    spec["chunker"].update(chunk_size=spec["chunk_size"], chunk_overlap=spec["chunk_overlap"])
    return KnowledgeRecipe.model_validate(spec)


def one_run(name: str) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    bench = BENCHMARKS[name]()
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=bm25_recipe(),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(output_dir=tmp / "run", store_dir=tmp / "store"),
    )

    async def go() -> tuple[Any, float, float]:
        t0 = time.perf_counter()
        contents = await runner.load()
        t1 = time.perf_counter()
        report = await runner.evaluate(contents)
        return report, t1 - t0, time.perf_counter() - t1

    report, load, evaluate = asyncio.run(go())
    timings = report.metadata["timings_seconds"]
    tracker = MlflowTracker(root=tmp)
    t0 = time.perf_counter()
    tracker.start(run_name=name, config={"recipe": report.recipe_manifest}, tags={})
    t1 = time.perf_counter()
    tracker.log_report(report, {"report": tmp / "run" / "report.json"})
    tracker.end()
    t2 = time.perf_counter()
    row = {f"score:{k}": v for k, v in report.score_summary.items()}
    row.update(
        knowledge_bases=float(len(report.knowledge_base_manifests)),
        cases=float(len(report.case_results)),
        load_s=load,
        write_documents_s=timings["write_documents"],
        build_s=timings["build"],
        query_s=timings["query"],
        score_s=timings["score"],
        evaluate_total_s=evaluate,
        mlflow_start_s=t1 - t0,
        mlflow_log_report_s=t2 - t1,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("benchmarks", nargs="*", help=f"any of {list(BENCHMARKS)} (default: all)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    unknown = sorted(set(args.benchmarks) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmarks {unknown}; choose from {list(BENCHMARKS)}")
    results = {}
    for name in args.benchmarks or list(BENCHMARKS):
        runs = [one_run(name) for _ in range(args.repeat)]
        results[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    keys = list(dict.fromkeys(k for row in results.values() for k in row))
    width = max(map(len, keys))
    print(f"{'':<{width}}  " + "  ".join(f"{n:>12}" for n in results))
    for key in keys:
        cells = "  ".join(
            f"{results[n][key]:>12.4f}" if key in results[n] else f"{'':>12}" for n in results
        )
        print(f"{key:<{width}}  {cells}")
    out = Path(__file__).resolve().parent / "results" / "stage_timings.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"repeat": args.repeat, "median": results}, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
