"""Crash-safe resume: a run killed halfway finishes on rerun with the same results, in the
same MLflow run; finished configurations are not evaluated twice; parallel units equal
sequential ones."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval import BenchmarkRunner, EvaluationReport, RunnerSettings
from heta_eval.benchmarks import SampleBenchmark
from heta_eval.records import EvaluationCaseResult
from heta_eval.run.journal import CaseJournal

from .conftest import REPO, load_recipe, user_env

SLOW = "recipe.indexes.bm25._target_=tests.faulty_components.SlowQueries"


def _cli(root: Path, cwd: Path, *args: str) -> subprocess.Popen[str]:
    env = user_env()
    env["PYTHONPATH"] = str(REPO)  # the test-only slow index lives in tests/
    return subprocess.Popen(
        [sys.executable, "-m", "heta_eval", f"paths.root={root}", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _by_case(report: EvaluationReport) -> dict[tuple[str, str, str], tuple]:
    return {
        (r.unit_id, r.case_id, r.query_mode): (r.scores, tuple(i.id for i in r.retrieved), r.error)
        for r in report.case_results
    }


@pytest.mark.slow
def test_sigkill_halfway_then_rerun_gives_the_uninterrupted_report(tmp_path: Path) -> None:
    args = (
        "benchmark=sample_units",
        SLOW,
        "+recipe.indexes.bm25.seconds=0.05",
        "runner.max_concurrent_queries=1",
    )
    root = tmp_path / "outputs"
    victim = _cli(root, tmp_path, *args)
    journals = root / "state"
    deadline = time.monotonic() + 120
    lines = 0
    while time.monotonic() < deadline and victim.poll() is None:
        found = list(journals.glob("*/journal.jsonl"))
        lines = found[0].read_text().count("\n") if found else 0
        if lines >= 12:
            break
        time.sleep(0.02)
    assert victim.poll() is None, victim.communicate()
    victim.send_signal(signal.SIGKILL)
    victim.communicate()
    assert 12 <= lines < 49  # killed halfway: some results journaled, not all
    # The tracking run is created by a worker process while the run goes on; killed before
    # it was saved, the worker still creates and saves it, for the rerun to continue.
    while time.monotonic() < deadline and not list(journals.glob("*/tracking.json")):
        time.sleep(0.05)

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    (killed,) = client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])
    assert killed.info.status == "RUNNING"

    resumed = _cli(root, tmp_path, *args)
    out, err = resumed.communicate(timeout=180)
    assert resumed.returncode == 0, err
    assert "resuming:" in out + err
    report_path = Path(
        next(x for x in out.splitlines() if x.startswith("report: ")).removeprefix("report: ")
    )
    report = EvaluationReport.read_json(report_path)
    assert 10 <= report.run.resumed_cases < 48

    (run,) = client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])
    assert run.info.run_id == killed.info.run_id and run.info.status == "FINISHED"

    clean_root = tmp_path / "clean"
    clean = _cli(clean_root, tmp_path, *args, "tracking=none")
    out, err = clean.communicate(timeout=180)
    assert clean.returncode == 0, err
    reference = EvaluationReport.read_json(
        Path(next(x for x in out.splitlines() if x.startswith("report: ")).removeprefix("report: "))
    )
    assert [(r.unit_id, r.case_id) for r in report.case_results] == [
        (r.unit_id, r.case_id) for r in reference.case_results
    ]
    assert _by_case(report) == _by_case(reference)
    assert report.score_summary == reference.score_summary


@pytest.mark.slow
def test_a_finished_configuration_is_not_evaluated_again(run_cli, tmp_path: Path) -> None:
    first = run_cli("runner.limit=5")
    assert first.returncode == 0, first.stderr
    again = run_cli("runner.limit=5")
    logs = again.stdout + again.stderr
    assert again.returncode == 0 and "already evaluated" in logs
    assert "unit corpus" not in logs  # nothing built, nothing queried
    forced = run_cli("runner.limit=5", "runner.resume=false")
    assert forced.returncode == 0
    assert "unit corpus: loaded" in forced.stdout + forced.stderr  # from the build cache
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}")
    runs = client.search_runs(
        [client.get_experiment_by_name("heta_eval").experiment_id],
        order_by=["attributes.start_time ASC"],
    )
    # The reuse is a run of its own, with the first run's metrics and where they come from.
    assert len(runs) == 3
    original, reused, _ = runs
    assert reused.data.tags["heta_eval.reused_from.run_id"] == original.info.run_id
    assert "heta_eval.reused_from.run_id" not in original.data.tags
    # The same scores, and none of the first run's costs (build times, cache counts).
    first, second = dict(original.data.metrics), dict(reused.data.metrics)
    assert (first.pop("run.reused"), second.pop("run.reused")) == (0, 1)
    costs = ("cache.", "kb.build_seconds")
    assert not [k for k in second if k.startswith(costs)]
    assert second == {k: v for k, v in first.items() if not k.startswith(costs)}
    assert reused.info.status == "FINISHED"


def test_journal_cuts_a_torn_last_line_and_ignores_other_configs(tmp_path: Path) -> None:
    journal = CaseJournal(tmp_path / "journal.jsonl", "hash-a")
    results = [
        EvaluationCaseResult(case_id=f"c{i}", unit_id="u", query_mode="bm25", query="q")
        for i in range(3)
    ]
    journal.record_cases(results)
    journal.close()
    with (tmp_path / "journal.jsonl").open("a") as handle:
        handle.write('{"kind": "case", "result": {"case_id": "c3", "unit')
    done, _ = CaseJournal(tmp_path / "journal.jsonl", "hash-a").read()
    assert sorted(k[1] for k in done) == ["c0", "c1", "c2"]
    assert (tmp_path / "journal.jsonl").read_text().endswith("}\n")
    assert CaseJournal(tmp_path / "journal.jsonl", "hash-b").read() == ({}, {})


@pytest.mark.slow
def test_parallel_units_equal_sequential(tmp_path: Path) -> None:
    def run(workers: int) -> EvaluationReport:
        bench = SampleBenchmark(shape="units")
        runner = BenchmarkRunner(
            benchmark=bench,
            recipe=load_recipe(),
            evaluators=bench.evaluators(),
            settings=RunnerSettings(
                output_dir=tmp_path / f"run{workers}", store_dir=tmp_path / "store", workers=workers
            ),
        )
        return asyncio.run(runner.run())

    sequential, parallel = run(1), run(2)
    assert parallel.run.workers == 2
    assert _by_case(parallel) == _by_case(sequential)
    assert [r.case_id for r in parallel.case_results] == [
        r.case_id for r in sequential.case_results
    ]
    assert parallel.score_summary == sequential.score_summary
    assert len(parallel.knowledge_base_manifests) == 4
