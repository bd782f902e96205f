"""UDA's six subsets in every source mode: knowledge bases, cases, UDA's evidence match at
top 1/3/5 with the authors' baseline recipe and with `bm25`, the answer metrics with
`bm25_extractive` and again from its replayed predictions, and each run's wall time.

Every run is `heta_eval.evaluate` in this process (tracking off, one scratch `paths.root`, so
a knowledge base that two recipes build alike is built once). The `bm25_extractive` run's
answers and rankings are exported as a predictions file (`export_predictions`, as
`heta-eval-export-predictions` writes it) and scored again with `recipe=replay
recipe.predictions=FILE`; the script fails when a replayed answer score differs from the
run's. Each metric's row also says how many cases it scored (the others were skipped: a
metric that cannot discriminate, or a question the authors leave out). Needs the dataset
tree at ../shared/datasets/uda (or `--data`).

    python benchmarks/uda_subsets.py [--subsets fin,nq] [--sources bench] [--json PATH]
"""

from __future__ import annotations

import argparse
import logging
import sys
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
KS = (1, 3, 5)


def _evaluate(root: Path, data: Path, subset: str, source: str, recipe: list[str]) -> Any:
    import heta_eval

    return heta_eval.evaluate(
        overrides=[
            f"paths.root={root}",
            "benchmark=uda",
            f"benchmark.subset={subset}",
            f"benchmark.source={source}",
            f"benchmark.data_root={data}",
            *recipe,
            "tracking=none",
            "runner.progress=off",
        ]
    )


def _row(report: Any, subset: str, source: str, recipe: str, seconds: float) -> dict[str, Any]:
    """The report's numbers; `NAME_scored` is how many cases metric NAME scored."""
    mode = report.primary_query_mode
    row: dict[str, Any] = {
        "subset": subset,
        "source": source,
        "recipe": recipe,
        "kbs": len(report.knowledge_base_manifests),
        "cases": len(report.case_results),
        "failed": len(report.failed_cases),
        "seconds": round(seconds, 1),
    }

    def put(key: str, *names: str) -> None:
        for name in names:
            if f"{mode}.{name}" in report.score_details:
                row[key] = report.score_summary.get(f"{mode}.{name}")
                row[f"{key}_scored"] = report.score_details[f"{mode}.{name}"].scored
                return

    for k in KS:  # tat's evidence match is our extension, named so
        put(f"match@{k}", f"uda_evidence_match@{k}", f"uda_evidence_match_ext@{k}")
    put("page_recall@5", "evidence_recall@5")
    for name in ANSWER_METRICS:
        put(name, name)
    return row


def _answer_scores(report: Any) -> dict[tuple[str | None, str, str], float | None]:
    return {
        (r.unit_id, r.case_id, s.name.split(".")[-1]): s.value
        for r in report.case_results
        for s in r.scores
        if s.name.split(".")[-1] in ANSWER_METRICS
    }


def _replay(
    root: Path, data: Path, subset: str, source: str, run: Any
) -> tuple[dict[str, Any], list[str]]:
    """Export `run`'s predictions, replay them; the row and the answer scores that differ."""
    from heta_eval.kb.replay.export import export_predictions

    path = root / "predictions" / f"{subset}-{source}.jsonl"
    export_predictions(run, path)
    started = time.perf_counter()
    replayed = _evaluate(
        root, data, subset, source, ["recipe=replay", f"recipe.predictions={path}"]
    )
    row = _row(replayed, subset, source, "replay", time.perf_counter() - started)
    theirs, ours = _answer_scores(run), _answer_scores(replayed)
    differ = [
        f"{subset}/{source} {key}: run {theirs.get(key)}, replay {ours.get(key)}"
        for key in sorted(set(theirs) | set(ours), key=str)
        if theirs.get(key) != ours.get(key)
    ]
    return row, differ


def _fmt(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _print(row: dict[str, Any]) -> None:
    def metric(key: str) -> str:
        return f"{_fmt(row.get(key))} (n={row.get(f'{key}_scored', 0)})"

    answers = " ".join(f"{k} {metric(k)}" for k in ANSWER_METRICS if k in row)
    print(
        f"{row['subset']:<10} {row['source']:<8} {row['recipe']:<15} kbs {row['kbs']:>3} "
        f"cases {row['cases']:>3} failed {row['failed']} "
        + " ".join(f"@{k} {metric(f'match@{k}')}" for k in KS)
        + f" page@5 {metric('page_recall@5')} {answers}  {row['seconds']} s",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA / "uda")
    parser.add_argument("--subsets", default=",".join(SUBSETS))
    parser.add_argument("--sources", default=",".join(SOURCES))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    root = scratch_dir("uda-subsets-")
    rows, differ = [], []
    for subset in args.subsets.split(","):
        for source in args.sources.split(","):
            reports = {}
            for recipe in RECIPES:
                started = time.perf_counter()
                report = _evaluate(root, args.data, subset, source, [f"recipe={recipe}"])
                reports[recipe] = report
                rows.append(_row(report, subset, source, recipe, time.perf_counter() - started))
                _print(rows[-1])
            extractive = reports["bm25_extractive"]
            replay_row, replay_differ = _replay(root, args.data, subset, source, extractive)
            replay_row["answers_equal_run"] = not replay_differ
            rows.append(replay_row)
            differ += replay_differ
            _print(replay_row)
    write_json(args.json, {"rows": rows, "replay_differences": differ})
    if differ:
        print(f"{len(differ)} replayed answer score(s) differ from the run's:", file=sys.stderr)
        print("\n".join(differ[:20]), file=sys.stderr)
        sys.exit(1)
    print("replayed answer scores equal the bm25_extractive runs' in every case")


if __name__ == "__main__":
    main()
