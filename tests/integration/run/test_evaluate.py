"""`heta_eval.evaluate()`, the library entry point that the CLI and sweep jobs also call."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

import heta_eval
from heta_eval.config.compose import compose_config


@pytest.mark.slow
def test_evaluate_from_overrides_writes_tracks_and_then_reuses(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    overrides = [f"paths.root={root}", "runner.limit=6", "runner.progress=off"]
    report = heta_eval.evaluate(overrides=overrides)
    assert len(report.case_results) == 6 and not report.failed_cases
    assert report.run.reused_from is None and report.run.identity is not None
    out = Path(report.run.output_dir or "")
    assert out.parent.parent == root / "runs"
    written = heta_eval.EvaluationReport.read_json(out / "report.json")
    assert written.model_dump() == report.model_dump()  # `where` is never written
    assert (out / "report.html").is_file() and (out / "config.resolved.yaml").is_file()
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    run = client.get_run(report.run.tracking.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["bm25.ndcg_at_10"] == pytest.approx(
        report.score_summary["bm25.ndcg@10"]
    )
    assert "mlflow ui" in report.run.tracking.where

    again = heta_eval.evaluate(overrides=overrides)
    assert again.run.reused_from is not None
    assert again.run.reused_from.report_id == report.report_id
    assert again.run.reused_from.tracking_run_id == run.info.run_id
    assert again.case_results == report.case_results
    assert again.run.tracking.run_id not in (None, run.info.run_id)
    assert Path(again.run.output_dir or "") != out


def test_evaluate_takes_components_and_refuses_bad_configs(tmp_path: Path) -> None:
    cfg = compose_config([f"paths.root={tmp_path}", "tracking=none", "runner.top_k=3"])
    components = heta_eval.assemble(cfg)
    assert components.top_k == 3
    report = heta_eval.evaluate(components=components)
    assert report.run.top_k == 3 and all(len(r.retrieved) <= 3 for r in report.case_results)
    assert report.run.tracking.run_id is None
    with pytest.raises(heta_eval.ConfigError, match=r"runner\.top_k: Input should be greater"):
        heta_eval.evaluate(overrides=[f"paths.root={tmp_path}", "runner.top_k=-1"])


def test_evaluate_raises_after_writing_when_too_many_cases_fail(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    overrides = [
        f"paths.root={tmp_path / 'outputs'}",
        "tracking=none",
        "runner.limit=4",
        f"runner.cache_dir={blocker}/cache",
        "runner.max_failure_rate=0.5",
    ]
    with pytest.raises(heta_eval.FailureRateExceededError, match="4 of 4 case results failed"):
        heta_eval.evaluate(overrides=overrides)
    (written,) = (tmp_path / "outputs" / "runs").rglob("report.json")
    assert len(heta_eval.EvaluationReport.read_json(written).failed_cases) == 4
