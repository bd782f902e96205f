"""Time each stage of a SciFact (BEIR, test split) evaluation with the bm25 recipe.

Usage: python benchmarks/scifact_stages.py [SCIFACT_DIR] [--repeat N]

Prints and writes JSON (benchmarks/results/scifact_stages.json) with: loading the benchmark,
writing raw documents, building the KB, querying, scoring, writing the report, and MLflow
logging (start + report) into a fresh SQLite store — the median of N repeats.
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from heta_eval import BenchmarkRunner, RunnerSettings  # noqa: E402
from heta_eval.tracking import MlflowTracker  # noqa: E402
from tests.beir_local import LocalBeir  # noqa: E402  (the BEIR adapter proper is issue 3)
from tests.conftest import load_recipe  # noqa: E402


def one_run(scifact: Path) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="scifact-"))
    bench = LocalBeir(scifact)
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=load_recipe(),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(top_k=100, output_dir=tmp / "run", store_dir=tmp / "store"),
    )

    async def go() -> tuple:
        t0 = time.perf_counter()
        contents = await runner.load()
        t1 = time.perf_counter()
        report = await runner.evaluate(contents)
        return report, t1 - t0, time.perf_counter() - t1

    report, load, evaluate = asyncio.run(go())
    timings = report.metadata["timings_seconds"]
    tracker = MlflowTracker(root=tmp)
    t0 = time.perf_counter()
    tracker.start(run_name="scifact", config={"recipe": report.recipe_manifest}, tags={})
    t1 = time.perf_counter()
    tracker.log_report(report, {"report": tmp / "run" / "report.json"})
    tracker.end()
    t2 = time.perf_counter()
    return {
        "ndcg@10": report.score_summary["bm25.ndcg@10"],
        "recall@100": report.score_summary["bm25.recall@100"],
        "load_s": load,
        "write_documents_s": timings["write_documents"],
        "build_s": timings["build"],
        "query_s": timings["query"],
        "score_s": timings["score"],
        "evaluate_total_s": evaluate,
        "mlflow_start_s": t1 - t0,
        "mlflow_log_report_s": t2 - t1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = REPO.parent / "shared" / "datasets" / "beir" / "scifact"
    parser.add_argument("scifact", nargs="?", type=Path, default=default)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(args.scifact) for _ in range(args.repeat)]
    median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    width = max(map(len, median))
    for key, value in median.items():
        print(f"{key:<{width}}  {value:.4f}")
    out = Path(__file__).resolve().parent / "results" / "scifact_stages.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"repeats": args.repeat, "median": median, "runs": runs}, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
