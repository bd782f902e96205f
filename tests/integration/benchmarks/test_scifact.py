"""SciFact (BEIR, test split) with the bm25 recipe, run from the command line in this process,
reproduces the published BM25 numbers, and every BEIR metric agrees with trec_eval
(pytrec_eval) query by query."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytrec_eval

from heta_eval import EvaluationReport
from heta_eval.benchmarks.beir import read_qrels

from ..conftest import SharedRun
from ..runs import printed_report

# Every test reads an evaluation of the 5,183 SciFact documents (over 5 s).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scifact_report(scifact_bm25: SharedRun) -> EvaluationReport:
    return scifact_bm25.report


def test_published_bm25_numbers_are_reproduced(scifact_report: EvaluationReport) -> None:
    # SOURCE.md: bm25s (Lucene variant, k1=1.5, b=0.75) nDCG@10 0.687; Pyserini bm25-flat
    # Recall@100 0.9253, multifield 0.9076.
    summary = scifact_report.score_summary
    assert len(scifact_report.case_results) == 300 and not scifact_report.failed_cases
    assert scifact_report.run.top_k == 100  # BEIR's default depth
    assert summary["bm25.ndcg@10"] == pytest.approx(0.687, abs=0.01)
    assert summary["bm25.recall@100"] == pytest.approx(0.91, abs=0.02)
    assert set(summary) == {
        f"bm25.{m}" for m in ("ndcg@10", "recall@100", "map@100", "mrr@10", "precision@10")
    }


def test_metrics_agree_with_trec_eval_per_query(
    scifact_report: EvaluationReport, scifact_dir: Path
) -> None:
    qrels = read_qrels(scifact_dir / "qrels" / "test.tsv")
    # The run as BEIR hands it to pytrec_eval: each document with its (best) BM25 score;
    # trec_eval orders it, ties included, and our metrics must rank it the same way.
    run: dict[str, dict[str, float]] = {}
    for result in scifact_report.case_results:
        ranked: dict[str, float] = {}
        for item in result.retrieved:
            ranked[item.document_id] = max(item.score, ranked.get(item.document_id, item.score))
        run[result.case_id] = ranked
    measures = {"ndcg_cut.10", "recall.100", "map_cut.100", "P.10", "recip_rank"}
    reference = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert set(reference) == {r.case_id for r in scifact_report.case_results}
    for result in scifact_report.case_results:
        expected = reference[result.case_id]
        assert result.score("ndcg@10") == pytest.approx(expected["ndcg_cut_10"], abs=1e-9)
        assert result.score("recall@100") == pytest.approx(expected["recall_100"], abs=1e-9)
        assert result.score("map@100") == pytest.approx(expected["map_cut_100"], abs=1e-9)
        assert result.score("precision@10") == pytest.approx(expected["P_10"], abs=1e-9)
        # trec_eval's recip_rank has no cutoff; MRR@10 is it when the first hit is in the top 10.
        rr = expected["recip_rank"]
        assert result.score("mrr@10") == pytest.approx(rr if rr >= 0.1 else 0.0, abs=1e-9)


def test_the_command_line_run_reproduces_it(scifact_bm25: SharedRun) -> None:
    assert scifact_bm25.cli.returncode == 0, scifact_bm25.cli.stderr
    report = printed_report(scifact_bm25.cli.stdout)
    assert report.benchmark.name == "beir-scifact"
    assert report.score_summary["bm25.ndcg@10"] == pytest.approx(0.687, abs=0.01)
    assert report.score_summary["bm25.recall@100"] == pytest.approx(0.91, abs=0.02)
