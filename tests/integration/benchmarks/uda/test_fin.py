"""UDA finance evaluated: one knowledge base per report, from the sampled bench or the QA
table + PDFs, through the runner and the command line (in this process).

The other five subsets are in test_subsets.py; what the adapter yields in
tests/unit/benchmarks/uda/test_adapter.py; the scoring in tests/unit/benchmarks/uda/."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval import BenchmarkRunner, EvaluationReport, RunnerSettings
from heta_eval.benchmarks import UdaBenchmark
from heta_eval.benchmarks.uda.answers import NO_ANSWERS_REASON
from heta_eval.benchmarks.uda.evidence import ONE_PAGE_REASON
from heta_eval.evaluators.exhaustive import exhaustive_reason

from ....conftest import SHARED, InProcessCli, load_recipe

UDA = SHARED / "datasets" / "uda"


@pytest.fixture(scope="module")
def uda_root() -> Path:
    if not (UDA / "qa" / "fin_qa.csv").is_file():
        pytest.skip(f"UDA data not found at {UDA}")
    return UDA


def _run(bench: UdaBenchmark, tmp: Path, **settings: object) -> EvaluationReport:
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=load_recipe(),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(output_dir=tmp / "run", store_dir=tmp / "store", **settings),
    )
    return asyncio.run(runner.run())


def test_bench_builds_one_kb_per_report(uda_root: Path, tmp_path: Path) -> None:
    report = _run(UdaBenchmark(source="bench", data_root=uda_root), tmp_path)
    assert len(report.knowledge_base_manifests) == 99
    assert len(report.case_results) == 451 and not report.failed_cases
    assert report.benchmark.name == "uda-fin" and report.benchmark.build_scope == "case"
    # Every case is answered from its own report's pages only.
    for result in report.case_results:
        assert all(
            item.document_id.startswith(f"{result.unit_id}-page_") for item in result.retrieved
        )
    gs = next(r for r in report.case_results if r.case_id == "GS/2016/page_79.pdf-3")
    assert gs.unit_id == "GS_2016"
    assert report.score_summary["bm25.evidence_recall@5"] >= 0.9
    # Without answer generation the answer metrics are skipped, not zero.
    detail = report.score_details["bm25.finqa_exact_match"]
    assert detail.scored == 0 and detail.skipped == 451
    assert detail.skipped_reasons == {NO_ANSWERS_REASON: 451}
    # Metrics that cannot fail are skipped per case: page recall where the knowledge base
    # is one page, a top 5 that holds every chunk of the knowledge base.
    recall = report.score_details["bm25.evidence_recall@5"]
    assert recall.skipped_reasons == {ONE_PAGE_REASON: 100} and recall.scored == 351
    match = report.score_details["bm25.uda_evidence_match@5"]
    assert match.skipped_reasons == {exhaustive_reason(5): 11} and match.scored == 440


@pytest.mark.slow
def test_qa_table_with_pdfs_finds_the_named_pages(
    uda_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        report = _run(UdaBenchmark(source="qa_table", data_root=uda_root), tmp_path)
    assert "skipped 785 documents (8146 questions)" in caplog.text
    assert sorted(m.name for m in report.knowledge_base_manifests) == [
        "uda-fin-bm25-ABMD_2012",
        "uda-fin-bm25-ADI_2009",
        "uda-fin-bm25-GS_2016",
    ]
    adi = [r for r in report.case_results if r.unit_id == "ADI_2009"]
    assert len(adi) == 9 and all(r.case_id.startswith("ADI/2009/") for r in adi)
    named = next(r for r in report.case_results if r.case_id == "ADI/2009/page_59.pdf-1")
    assert named.score("evidence_recall@5") == 1.0
    assert 58 in [item.page_index for item in named.retrieved[:5]]
    # Reference (pypdf pages, bm25s + PyStemmer, top 5 pages): 39 of 44 questions.
    found = sum(r.score("evidence_recall@5") or 0 for r in report.case_results)
    assert found >= 39


@pytest.mark.slow
def test_the_command_line_logs_one_run_for_99_units(
    uda_root: Path, cli: InProcessCli, tmp_path: Path
) -> None:
    proc = cli("benchmark=uda", f"benchmark.data_root={uda_root}")
    assert proc.returncode == 0, proc.stderr
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])
    assert run.data.tags["benchmark.name"] == "uda-fin"
    assert len(client.get_metric_history(run.info.run_id, "kb.build_seconds")) == 99
    assert run.data.metrics["bm25.evidence_recall_at_5"] >= 0.9


@pytest.mark.slow
def test_mixed_source_reports_evidence_recall_per_source_type(
    uda_root: Path, tmp_path: Path
) -> None:
    report = _run(UdaBenchmark(source="mixed", data_root=uda_root), tmp_path)
    # Three reports from their PDFs (QA-table questions), the other bench reports from page text.
    assert len(report.knowledge_base_manifests) == 101 and len(report.case_results) == 489
    by_type = {r.labels["source_type"] for r in report.case_results}
    assert by_type == {"pdf", "page_text"}
    pdf = report.score_slices["source_type=pdf"]["bm25.evidence_recall@5"]
    pages = report.score_slices["source_type=page_text"]["bm25.evidence_recall@5"]
    assert pdf == pytest.approx(39 / 44) and pages > 0.95
    gs = [r for r in report.case_results if r.unit_id == "GS_2016"]
    assert len(gs) == 23 and all(r.labels["source_type"] == "pdf" for r in gs)
