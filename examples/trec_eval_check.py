"""Cross-check the document-level metrics of a BEIR run against trec_eval, query by query.

    python examples/trec_eval_check.py REPORT_JSON QRELS_TSV [--mode bm25]

Rebuilds the run from `report.json` as BEIR hands it to trec_eval (each document with its
best chunk score; a document whose id equals the query id dropped, BEIR's default), scores it
with pytrec_eval (the `dev` extra installs it) and compares every query's nDCG@10,
Recall@100, MAP@100, P@10 and MRR@10 with the report's. Prints both means per metric and the
largest difference; exits 1 if any query differs by more than 1e-9.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heta_eval.benchmarks.beir import read_qrels
from heta_eval.records import EvaluationReport

# Our metric -> trec_eval measure (MRR@10 is trec_eval's recip_rank cut at rank 10).
MEASURES = {
    "ndcg@10": "ndcg_cut_10",
    "recall@100": "recall_100",
    "map@100": "map_cut_100",
    "precision@10": "P_10",
    "mrr@10": "recip_rank",
}
TOLERANCE = 1e-9


def compare(report: EvaluationReport, qrels: dict[str, dict[str, int]], mode: str) -> int:
    """Print our and trec_eval's mean per metric; return the number of disagreeing metrics."""
    import pytrec_eval

    results = [r for r in report.case_results if r.query_mode == mode and r.error is None]
    if not results:
        raise SystemExit(f"the report has no scored cases for query mode {mode!r}")
    run: dict[str, dict[str, float]] = {}
    for result in results:
        ranked: dict[str, float] = {}
        for item in result.retrieved:
            ranked[item.document_id] = max(item.score, ranked.get(item.document_id, item.score))
        ranked.pop(result.case_id, None)
        run[result.case_id] = ranked
    measures = {"ndcg_cut.10", "recall.100", "map_cut.100", "P.10", "recip_rank"}
    reference = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    judged = [r for r in results if r.case_id in reference]
    failures = 0
    print(f"{len(judged)} judged queries, query mode {mode}")
    print(f"{'metric':<14}{'heta_eval':>11}{'trec_eval':>11}{'max |diff|':>12}")
    for ours, theirs in MEASURES.items():
        mine, ref = [], []
        for result in judged:
            expected = reference[result.case_id][theirs]
            if theirs == "recip_rank" and expected < 0.1:
                expected = 0.0  # the first relevant document is below rank 10
            mine.append(result.score(ours) or 0.0)
            ref.append(expected)
        worst = max(abs(a - b) for a, b in zip(mine, ref, strict=True))
        failures += worst > TOLERANCE
        print(f"{ours:<14}{sum(mine) / len(mine):>11.4f}{sum(ref) / len(ref):>11.4f}{worst:>12.1e}")
    return failures


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; the exit status is 0 when every query agrees."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="report.json of a benchmark=beir run")
    parser.add_argument("qrels", type=Path, help="the dataset's qrels/<split>.tsv")
    parser.add_argument("--mode", default="bm25", help="query mode to check (default: bm25)")
    args = parser.parse_args(argv)
    failures = compare(EvaluationReport.read_json(args.report), read_qrels(args.qrels), args.mode)
    print("agree with trec_eval" if not failures else f"{failures} metric(s) disagree")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
