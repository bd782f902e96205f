"""BM25, dense and hybrid (RRF) retrieval on the full SciFact test split.

Usage: python benchmarks/dense_scifact.py [--recipes bm25 dense hybrid] [--cache-dir DIR]

Each recipe (conf/recipe/{name}.yaml) runs through BenchmarkRunner with the build cache on
(under --cache-dir, which also holds the dense embedding cache), so a rerun loads the built
knowledge bases instead of encoding 5,183 documents again. Prints nDCG@10, Recall@100, the
build seconds (of this run: the load time on a cache hit; of the original build in "orig"),
query latency and queries per second per query mode, and writes
benchmarks/results/dense_scifact.json. Needs `pip install 'heta-eval[dense]'`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "datasets" / "beir" / "scifact"
sys.path.insert(0, str(REPO))

from heta_eval import BenchmarkRunner, KnowledgeRecipe, RunnerSettings  # noqa: E402
from heta_eval.benchmarks import BeirBenchmark  # noqa: E402


def recipe(name: str) -> KnowledgeRecipe:
    import yaml

    spec = yaml.safe_load((REPO / "conf" / "recipe" / f"{name}.yaml").read_text())
    spec["chunker"].update(chunk_size=spec["chunk_size"], chunk_overlap=spec["chunk_overlap"])
    return KnowledgeRecipe.model_validate(spec)


def run(name: str, cache_dir: Path) -> list[dict[str, Any]]:
    tmp = Path(tempfile.mkdtemp(prefix=f"dense-scifact-{name}-"))
    bench = BeirBenchmark(dataset="scifact", data_root=SCIFACT)
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=recipe(name),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(
            output_dir=tmp / "run",
            store_dir=tmp / "store",
            workspace_dir=tmp / "data",
            state_dir=tmp / "state",
            cache="readwrite",
            cache_dir=cache_dir / "build",
            offline=True,
        ),
    )

    async def go() -> tuple[Any, float]:
        contents = await runner.load()
        started = time.perf_counter()
        report = await runner.evaluate(contents)
        return report, time.perf_counter() - started

    report, wall = asyncio.run(go())
    manifests = report.knowledge_base_manifests
    cache = report.run.cache
    rows = []
    for mode in report.query_modes:
        cases = [r for r in report.case_results if r.query_mode == mode]
        latency = sum(r.latency_seconds or 0.0 for r in cases)
        rows.append(
            {
                "recipe": name,
                "mode": mode,
                "ndcg@10": report.score_summary[f"{mode}.ndcg@10"],
                "recall@100": report.score_summary[f"{mode}.recall@100"],
                "queries": len(cases),
                "failed": sum(1 for r in cases if r.error is not None),
                "build_s": sum(
                    (m.load_seconds or 0.0) if m.cache_status == "hit" else m.build_seconds
                    for m in manifests
                ),
                "original_build_s": sum(m.build_seconds for m in manifests),
                "cache": "hit" if cache["hits"] else "miss",
                "ms_per_query": 1000 * latency / max(len(cases), 1),
                "qps": len(cases) / latency if latency else float("inf"),
                "evaluate_wall_s": wall,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", nargs="+", default=["bm25", "dense", "hybrid"])
    parser.add_argument("--cache-dir", type=Path, default=REPO / "outputs" / "dense_scifact_cache")
    args = parser.parse_args()
    if not (SCIFACT / "corpus.jsonl").is_file():
        parser.error(f"SciFact not found at {SCIFACT}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # The dense embedding cache (DenseIndex cache_dir null) lives next to the build cache.
    os.environ.setdefault("HETA_EVAL_CACHE", str(args.cache_dir.resolve()))
    rows = []
    for name in args.recipes:
        print(f"running {name} ...", flush=True)
        rows.extend(run(name, args.cache_dir.resolve()))
    header = (
        f"{'recipe':<8} {'mode':<8} {'nDCG@10':>8} {'R@100':>7} {'build s':>8} {'(orig)':>8} "
        f"{'cache':>5} {'ms/q':>7} {'q/s':>8}"
    )
    print(header)
    for r in rows:
        print(
            f"{r['recipe']:<8} {r['mode']:<8} {r['ndcg@10']:>8.4f} {r['recall@100']:>7.4f} "
            f"{r['build_s']:>8.1f} {r['original_build_s']:>8.1f} {r['cache']:>5} "
            f"{r['ms_per_query']:>7.2f} {r['qps']:>8.1f}"
        )
    out = REPO / "benchmarks" / "results" / "dense_scifact.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
