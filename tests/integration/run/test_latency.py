"""Latencies say how they were measured: real runs of the sample benchmark in this process
(BM25 queries batched by default, one at a time with `runner.query_batch_size=1`), their
report.json and report.html, and their MLflow metrics and case table read back with
MlflowClient."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

import heta_eval
from heta_eval.records import EvaluationReport
from heta_eval.reporting.html import REPORT_HTML

from ..conftest import SharedRun
from ..runs import mlflow_client

PERCENTILES = {"latency_p50_seconds", "latency_p95_seconds"}
BATCHED = {"latency_mean_batched_seconds", "latency_batch_size"}


def _run(root: Path, *overrides: str) -> tuple[Path, EvaluationReport]:
    """The sample with bm25, tracked under `root`: (run directory, report)."""
    report = heta_eval.evaluate(
        overrides=[f"paths.root={root}", "runner.progress=off", "recipe=bm25", *overrides]
    )
    return Path(report.run.output_dir or ""), report


def _tracked(
    root: Path, report: EvaluationReport, tmp_path: Path
) -> tuple[dict[str, float], dict[str, Any]]:
    """The metrics and the case table of `report`'s MLflow run."""
    client = mlflow_client(root)
    run = client.get_run(report.run.tracking.run_id or "")
    table = client.download_artifacts(run.info.run_id, "case_results.json", str(tmp_path))
    return run.data.metrics, json.loads(Path(table).read_text())


def _percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(sorted(values), n=100, method="inclusive")[q - 1]


def _latency_section(run_dir: Path) -> str:
    page = (run_dir / REPORT_HTML).read_text(encoding="utf-8")
    start = page.index('<section id="latency">')
    return page[start : page.index("</section>", start)]


def test_batched_latencies_are_labelled_and_one_at_a_time_gives_percentiles(
    sample_run: SharedRun, tmp_path: Path
) -> None:
    # Default: the 48 BM25 queries retrieved in one call, each latency the call's mean.
    batched_dir, batched = sample_run.run_dir, sample_run.report
    cases = [r for r in batched.case_results if r.query_mode == "bm25"]
    assert len(cases) == 48
    assert {r.latency_batch_size for r in cases} == {48}
    assert len({r.latency_seconds for r in cases}) == 1  # one batch: one share for each
    metrics, table = _tracked(sample_run.root, batched, tmp_path / "dl-batched")
    mean = statistics.fmean(r.latency_seconds or 0.0 for r in cases)
    assert metrics["bm25.latency_mean_batched_seconds"] == pytest.approx(mean)
    assert metrics["latency_mean_batched_seconds"] == pytest.approx(mean)  # the headline
    assert metrics["bm25.latency_batch_size"] == 48 and "latency_batch_size" not in metrics
    assert not {m for m in metrics if m.removeprefix("bm25.") in PERCENTILES}
    column = table["columns"].index("latency_batch_size")
    assert {row[column] for row in table["data"]} == {48}
    section = _latency_section(batched_dir)
    assert "mean over 1 batch(es) of up to 48 queries" in section
    assert "runner.query_batch_size=1" in section
    assert "<td>each query alone</td>" not in section
    assert 'alt="query latency"' not in section  # batch means are not plotted
    assert "response cache" not in section  # every query retrieved in this run

    # runner.query_batch_size=1: every query alone, with its own latency and percentiles.
    alone_dir, alone = _run(tmp_path / "alone", "runner.query_batch_size=1")
    assert alone.run.identity.digest == batched.run.identity.digest  # type: ignore[union-attr]
    single = [r for r in alone.case_results if r.query_mode == "bm25"]
    assert {r.latency_batch_size for r in single} == {1}
    latencies = [r.latency_seconds or 0.0 for r in single]
    assert len(set(latencies)) > 1
    metrics, table = _tracked(tmp_path / "alone", alone, tmp_path / "dl-alone")
    assert metrics["bm25.latency_p50_seconds"] == pytest.approx(_percentile(latencies, 50))
    assert metrics["bm25.latency_p95_seconds"] == pytest.approx(_percentile(latencies, 95))
    assert metrics["latency_p50_seconds"] == metrics["bm25.latency_p50_seconds"]
    assert not {m for m in metrics if m.removeprefix("bm25.") in BATCHED}
    column = table["columns"].index("latency_batch_size")
    assert {row[column] for row in table["data"]} == {1}
    section = _latency_section(alone_dir)
    assert "<td>each query alone</td>" in section and "batch(es)" not in section
    assert 'alt="query latency"' in section

    # The same scores and rankings both ways.
    assert alone.score_summary == batched.score_summary
    assert alone.score_details == batched.score_details

    def ranked(report: EvaluationReport) -> list[tuple]:
        return [(r.case_id, r.scores, r.retrieved) for r in report.case_results]

    assert ranked(alone) == ranked(batched)


def test_responses_from_the_cache_keep_the_latency_and_batch_size_they_were_measured_with(
    sample_run: SharedRun, tmp_path: Path
) -> None:
    root, first = sample_run.root, sample_run.report
    # Evaluated again (not the finished run reused), one query at a time: every response
    # comes from the response cache, with the latency measured in the first run's batch.
    run_dir, again = _run(root, "runner.query_batch_size=1", "runner.resume=false")
    assert again.run.reused_from is None and again.run.cache["response_hits"] == 48
    measured = {r.case_id: (r.latency_seconds, r.latency_batch_size) for r in first.case_results}
    assert {r.case_id: (r.latency_seconds, r.latency_batch_size) for r in again.case_results} == (
        measured
    )
    assert set(measured.values()) == {(first.case_results[0].latency_seconds, 48)}
    metrics, _ = _tracked(root, again, tmp_path / "dl")
    assert "bm25.latency_mean_batched_seconds" in metrics
    assert "bm25.latency_p50_seconds" not in metrics
    section = _latency_section(run_dir)
    assert "mean over 1 batch(es) of up to 48 queries" in section
    assert "48 response(s) came from the response cache" in section
