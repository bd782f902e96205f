"""UDA's six subsets in every source mode: knowledge bases, cases, UDA's evidence match at
top 1/3/5 with the authors' baseline recipe and with `bm25`, the answer metrics with
`bm25_extractive`, and each run's wall time.

Every run is `heta_eval.evaluate` in this process (tracking off, one scratch `paths.root`, so
a knowledge base that two recipes build alike is built once). Needs the dataset tree at
../shared/datasets/uda (or `--data`).

    python benchmarks/uda_subsets.py [--subsets fin,nq] [--sources bench] [--json PATH]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

from _common import DATA, scratch_dir, write_json

SUBSETS = ("fin", "tat", "paper_text", "paper_tab", "feta", "nq")
SOURCES = ("bench", "qa_table", "mixed")
RECIPES = ("uda_baseline", "bm25", "bm25_extractive")
ANSWER_METRICS = (
    "finqa_exact_match",
    "tatqa_exact_match",
    "tatqa_f1",
    "qasper_answer_f1",
    "feta_answer_f1",
    "nq_answer_f1",
)


def _run(root: Path, data: Path, subset: str, source: str, recipe: str) -> dict[str, Any]:
    import heta_eval

    started = time.perf_counter()
    report = heta_eval.evaluate(
        overrides=[
            f"paths.root={root}",
            "benchmark=uda",
            f"benchmark.subset={subset}",
            f"benchmark.source={source}",
            f"benchmark.data_root={data}",
            f"recipe={recipe}",
            "tracking=none",
            "runner.progress=off",
        ]
    )
    summary = report.score_summary
    row: dict[str, Any] = {
        "subset": subset,
        "source": source,
        "recipe": recipe,
        "kbs": len(report.knowledge_base_manifests),
        "cases": len(report.case_results),
        "failed": len(report.failed_cases),
        "seconds": round(time.perf_counter() - started, 1),
    }
    for k in (1, 3, 5):
        row[f"match@{k}"] = summary.get(f"bm25.uda_evidence_match@{k}")
        detail = report.score_details.get(f"bm25.uda_evidence_match@{k}")
        row["evidence_cases"] = detail.scored if detail else 0
    row["page_recall@5"] = summary.get("bm25.evidence_recall@5")
    for name in ANSWER_METRICS:
        if f"bm25.{name}" in summary:
            row[name] = summary[f"bm25.{name}"]
    return row


def _fmt(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA / "uda")
    parser.add_argument("--subsets", default=",".join(SUBSETS))
    parser.add_argument("--sources", default=",".join(SOURCES))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    root = scratch_dir("uda-subsets-")
    rows = []
    for subset in args.subsets.split(","):
        for source in args.sources.split(","):
            for recipe in RECIPES:
                row = _run(root, args.data, subset, source, recipe)
                rows.append(row)
                answers = {k: v for k, v in row.items() if k in ANSWER_METRICS}
                print(
                    f"{subset:<10} {source:<8} {recipe:<15} kbs {row['kbs']:>3} "
                    f"cases {row['cases']:>3} (evidence {row['evidence_cases']:>3}) "
                    + " ".join(_fmt(row[f"match@{k}"]) for k in (1, 3, 5))
                    + f" page@5 {_fmt(row['page_recall@5'])} "
                    + " ".join(f"{k} {_fmt(v)}" for k, v in answers.items())
                    + f"  {row['seconds']} s",
                    flush=True,
                )
    write_json(args.json, {"rows": rows})


if __name__ == "__main__":
    main()
