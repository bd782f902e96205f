"""UDA finance: one knowledge base per report, from the sampled bench or the QA table + PDFs.

The other five subsets are in test_uda_subsets.py; the scoring in test_uda_scoring.py."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from heta_eval import BenchmarkRunner, EvaluationReport, RunnerSettings
from heta_eval.benchmarks import BenchmarkDataError, UdaBenchmark
from heta_eval.benchmarks.uda.answers import NO_ANSWERS_REASON
from heta_eval.benchmarks.uda.documents import render_row
from heta_eval.benchmarks.uda.entries import page_number
from heta_eval.benchmarks.uda.evidence import ONE_PAGE_REASON
from heta_eval.evaluators.exhaustive import exhaustive_reason
from heta_eval.records import BenchmarkWorkspace

from .conftest import SHARED, load_recipe

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


def test_page_numbers_and_rows() -> None:
    assert page_number("ADI/2009/page_59.pdf-1") == 59
    assert page_number("doc-3") is None
    header = ["$ in billions", "2016", "2015"]
    assert (
        render_row(header, ["fixed income", "578", "530"]) == "fixed income: 2016 = 578; 2015 = 530"
    )
    assert render_row(header, ["short"]) == "short"


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


def test_bench_pages_carry_rows_and_answers(uda_root: Path, tmp_path: Path) -> None:
    bench = UdaBenchmark(source="bench", data_root=uda_root)

    async def load() -> tuple[list, list]:
        prepared = await bench.prepare(BenchmarkWorkspace(root=tmp_path))
        return [d async for d in bench.documents(prepared)], [
            c async for c in bench.cases(prepared)
        ]

    documents, cases = asyncio.run(load())
    page = next(d for d in documents if d.document_id == "GS_2016-page_79")
    segments = json.loads(page.data)["segments"]
    row = next(s for s in segments if s["locator"].get("row_index") == 4)
    assert row["locator"] == {"page_index": 78, "table_id": "table", "row_index": 4}
    assert row["text"].startswith("total long-term assets under supervision:")
    case = next(c for c in cases if c.case_id == "GS/2016/page_79.pdf-3")
    assert case.expected.answers == ("57%", "0.57484")
    assert case.expected.evidence[0].locator == {"document_id": "GS_2016-page_79", "page_index": 78}
    assert len({d.document_id for d in documents}) == len(documents)


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


def test_missing_or_malformed_inputs(uda_root: Path, tmp_path: Path) -> None:
    with pytest.raises(
        BenchmarkDataError, match=r"benchmark\.data_root: .*bench_fin_qa\.json not found"
    ):
        asyncio.run(UdaBenchmark(data_root=tmp_path).prepare(BenchmarkWorkspace(root=tmp_path)))
    (tmp_path / "qa").mkdir()
    (tmp_path / "qa" / "fin_qa.csv").write_text("doc|question\nADI_2009|what?\n")
    table = UdaBenchmark(
        source="qa_table",
        data_root=tmp_path,
        documents_dir=uda_root / "src_doc_files_example" / "fin_docs",
    )
    with pytest.raises(
        BenchmarkDataError,
        match=r"fin_qa\.csv:1: header lacks \['answer_1', 'doc_name', 'q_uid'\]",
    ):
        asyncio.run(_cases(table, tmp_path))
    no_docs = UdaBenchmark(source="qa_table", data_root=tmp_path)
    with pytest.raises(BenchmarkDataError, match=r"benchmark\.documents_dir"):
        asyncio.run(no_docs.prepare(BenchmarkWorkspace(root=tmp_path)))
    bench_dir = tmp_path / "extended_qa_info_bench"
    bench_dir.mkdir()
    (bench_dir / "bench_fin_qa.json").write_text(
        json.dumps({"ADI_2009": [{"q_uid": "ADI/2009/page_1.pdf-1"}]})
    )
    with pytest.raises(BenchmarkDataError, match=r"\['ADI_2009'\]\[0\]: missing field 'question'"):
        asyncio.run(_cases(UdaBenchmark(data_root=tmp_path), tmp_path))


async def _cases(bench: UdaBenchmark, tmp_path: Path) -> list:
    prepared = await bench.prepare(BenchmarkWorkspace(root=tmp_path))
    return [c async for c in bench.cases(prepared)]


@pytest.mark.slow
def test_the_command_line_logs_one_run_for_99_units(
    uda_root: Path, run_cli, tmp_path: Path
) -> None:
    from mlflow import MlflowClient

    proc = run_cli("benchmark=uda", f"benchmark.data_root={uda_root}")
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
