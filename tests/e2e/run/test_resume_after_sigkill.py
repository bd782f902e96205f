"""Crash-safe resume: a run killed (SIGKILL) halfway finishes on rerun with the results an
uninterrupted run gives, in the same MLflow run, continued rather than a second one.

A real `heta-eval` process, held halfway (tests/gates.py: twelve cases scored and journaled,
the thirteenth waiting at a gate) when it is killed, so the kill always comes mid-run.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval import EvaluationReport

from ...gates import pause_after, wait_for_file
from ...reliability.processes import run_cli, start_cli
from ...tracking_readback import record_of

PAUSE_AFTER = 12


def _by_case(report: EvaluationReport) -> dict[tuple[str, str, str], tuple]:
    return {
        (r.unit_id, r.case_id, r.query_mode): (r.scores, tuple(i.id for i in r.retrieved), r.error)
        for r in report.case_results
    }


@pytest.mark.slow  # SIGKILL needs a real process; then its rerun and a clean run
def test_sigkill_halfway_then_rerun_gives_the_uninterrupted_report(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    paused, gate = tmp_path / "paused", tmp_path / "gate"
    args = ("runner.max_concurrent_queries=1", pause_after(paused, gate, PAUSE_AFTER))
    victim = start_cli(root, tmp_path, *args)
    wait_for_file(paused, victim)
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=60)
    assert victim.returncode == -signal.SIGKILL
    (journal,) = (root / "state").glob("*/journal.jsonl")
    assert journal.read_text().count('"kind": "case"') >= PAUSE_AFTER

    # The MLflow run was created before the evaluation: the killed attempt left it RUNNING.
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("heta_eval").experiment_id
    (killed,) = client.search_runs([experiment])
    assert killed.info.status == "RUNNING"
    (first_dir,) = (root / "runs").glob("*/*")
    assert record_of(first_dir).run_id == killed.info.run_id
    assert record_of(first_dir).status is None  # killed: it never ended

    gate.touch()
    resumed = run_cli(root, tmp_path, *args)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming:" in resumed.stdout + resumed.stderr
    report = EvaluationReport.read_json(resumed.report_path)
    assert PAUSE_AFTER <= report.run.resumed_cases < len(report.case_results)
    (run,) = client.search_runs([experiment])
    assert run.info.run_id == killed.info.run_id and run.info.status == "FINISHED"
    assert run.data.metrics["cases.resumed"] == report.run.resumed_cases
    assert report.run.tracking.run_id == run.info.run_id
    record = record_of(resumed.report_path.parent)
    assert record.run_id == run.info.run_id and record.synced and record.status == "FINISHED"

    clean = run_cli(tmp_path / "clean", tmp_path, *args, "tracking=none")
    assert clean.returncode == 0, clean.stderr
    reference = EvaluationReport.read_json(clean.report_path)
    assert [(r.unit_id, r.case_id) for r in report.case_results] == [
        (r.unit_id, r.case_id) for r in reference.case_results
    ]
    assert _by_case(report) == _by_case(reference)
    assert report.score_summary == reference.score_summary
