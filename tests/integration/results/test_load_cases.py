"""`heta_eval.load_cases`: case-level results of real runs (evaluated in this process) as a
DataFrame, from report.json and from MLflow (the case table, or report.json when no case
table was logged)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import heta_eval
from heta_eval.records import EvaluationReport
from heta_eval.results.runs_frame import RunsError

KEYS = ["unit_id", "case_id", "query_mode", "metric"]


def _run(root: Path, *overrides: str) -> tuple[Path, str]:
    """Evaluate 12 cases of the sample, tracked under `root`: (report.json, MLflow run id)."""
    report = heta_eval.evaluate(
        overrides=[f"paths.root={root}", "runner.progress=off", "runner.limit=12", *overrides]
    )
    report_path = Path(report.run.output_dir or "") / "report.json"
    return report_path, json.loads(report_path.read_text())["run"]["tracking"]["run_id"]


@pytest.mark.slow
def test_cases_from_report_json_and_from_mlflow_agree_and_pair(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    fusion_path, fusion_run = _run(root, "recipe=bm25_fusion")
    bm25_path, bm25_run = _run(root, "tracking.log_case_table=false")
    report = EvaluationReport.model_validate_json(fusion_path.read_text())

    frame = heta_eval.load_cases(fusion_path)
    metrics = list(report.run.evaluators)
    assert len(frame) == 12 * len(report.query_modes) * len(metrics) and len(metrics) == 4
    assert list(frame.columns[:15]) == [
        *("run_id", "report_id", "benchmark", "recipe", "unit_id", "case_id", "query_mode"),
        *("metric", "value", "status", "skipped_reason", "latency_seconds", "latency_batch_size"),
        *("error", "query"),
    ]
    assert {"label_difficulty", "label_question_type"} <= set(frame.columns)
    assert set(frame["run_id"]) == {fusion_run} and set(frame["report_id"]) == {report.report_id}
    assert set(frame["benchmark"]) == {"sample/1/test"} and set(frame["recipe"]) == {"bm25_fusion"}
    assert set(frame["status"]) == {"scored"}
    means = frame.groupby(["query_mode", "metric"])["value"].mean()
    for (mode, metric), mean in means.items():
        assert mean == pytest.approx(report.score_summary[f"{mode}.{metric}"])

    # The same rows from the MLflow run's case table, from the run directory, in memory.
    tracked = heta_eval.load_cases(fusion_run, root=root)
    columns = [*KEYS, "value", "latency_seconds", "latency_batch_size"]
    columns += ["label_difficulty", "label_question_type"]
    pd.testing.assert_frame_equal(
        tracked[columns].sort_values(KEYS).reset_index(drop=True),
        frame[columns].sort_values(KEYS).reset_index(drop=True),
    )
    assert set(tracked["run_id"]) == {fusion_run} and set(tracked["recipe"]) == {"bm25_fusion"}
    assert set(tracked["benchmark"]) == {"sample/1/test"}
    pd.testing.assert_frame_equal(heta_eval.load_cases(fusion_path.parent), frame)
    pd.testing.assert_frame_equal(heta_eval.load_cases(report), frame)

    # A run that logged no case table: read from its report.json artifact.
    no_table = heta_eval.load_cases(bm25_run, root=root)
    from_file = heta_eval.load_cases(bm25_path)
    pd.testing.assert_frame_equal(no_table, from_file)

    # Paired analysis across runs: bm25 in one run against fusion in the other, per case.
    both = heta_eval.load_cases([bm25_path, fusion_run], root=root)
    ndcg = both[both["metric"] == "ndcg@10"]
    a = ndcg[(ndcg["run_id"] == bm25_run) & (ndcg["query_mode"] == "bm25")]
    b = ndcg[(ndcg["run_id"] == fusion_run) & (ndcg["query_mode"] == "fusion")]
    pairs = a.merge(b, on=["unit_id", "case_id"], suffixes=("_a", "_b"))
    assert len(pairs) == 12
    assert (pairs["value_b"] - pairs["value_a"]).mean() == pytest.approx(
        report.score_summary["fusion.ndcg@10"]
        - EvaluationReport.model_validate_json(bm25_path.read_text()).score_summary["bm25.ndcg@10"]
    )


def test_a_source_that_is_none_of_those_is_named(tmp_path: Path) -> None:
    with pytest.raises(RunsError, match=r"nope: not a report.json, a run directory or an MLflow"):
        heta_eval.load_cases("nope")
    with pytest.raises(RunsError, match=rf"{tmp_path}/report.json: no report.json there"):
        heta_eval.load_cases(tmp_path)
