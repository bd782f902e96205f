"""SciFact (BEIR, test split) with the bm25 recipe reproduces the published BM25 numbers,
and every BEIR metric agrees with trec_eval (pytrec_eval) query by query."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import pytrec_eval

from heta_eval import BenchmarkRunner, EvaluationReport, RunnerSettings
from heta_eval.benchmarks import BeirBenchmark
from heta_eval.benchmarks.beir import read_qrels

from .conftest import CliRunner, load_recipe

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scifact_report(scifact_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> EvaluationReport:
    tmp = tmp_path_factory.mktemp("scifact")
    bench = BeirBenchmark(dataset="scifact", data_root=scifact_dir)
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=load_recipe(),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(output_dir=tmp / "run", store_dir=tmp / "store"),
    )
    return asyncio.run(runner.run())


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


def test_the_command_line_run_reproduces_it(run_cli: CliRunner, scifact_dir: Path) -> None:
    proc = run_cli(
        "benchmark=beir",
        "benchmark.dataset=scifact",
        f"benchmark.data_root={scifact_dir}",
        "recipe=bm25",
        "tracking=none",
    )
    assert proc.returncode == 0, proc.stderr
    report_line = next(x for x in proc.stdout.splitlines() if x.startswith("report: "))
    report = EvaluationReport.read_json(Path(report_line.removeprefix("report: ")))
    assert report.benchmark.name == "beir-scifact"
    assert report.score_summary["bm25.ndcg@10"] == pytest.approx(0.687, abs=0.01)
    assert report.score_summary["bm25.recall@100"] == pytest.approx(0.91, abs=0.02)
