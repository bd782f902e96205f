"""Parallel writers: the jobs of a parallel sweep share one SQLite MLflow store and one build
cache (some jobs build the same knowledge base at the same time), and two `heta-eval`
processes of one configuration run at once. No run is lost, no cache entry is corrupt.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval import EvaluationReport
from heta_eval.tracking.projection import report_metrics

from ..conftest import job_logs
from .processes import Finished, run_cli, start_cli, verify_cache


def _client(root: Path) -> MlflowClient:
    return MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")


@pytest.mark.slow
def test_parallel_sweep_shares_one_store_and_one_cache(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    # Jobs 0 and 1 (chunk size 32) start together and build the same knowledge base; the
    # third job of each chunk size starts after one of them ended and finds it cached.
    done = run_cli(
        root,
        tmp_path,
        "-m",
        "hydra/launcher=local_parallel",
        "hydra.launcher.n_jobs=2",
        "runner.limit=10",
        "recipe.chunk_size=32,64",
        "runner.top_k=3,5,10",
    )
    assert done.returncode == 0, done.stderr
    client = _client(root)
    runs = client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])
    parents = [r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and len(children) == 6 and len(runs) == 7
    (parent,) = parents
    assert parent.info.status == "FINISHED", job_logs(root)
    assert parent.data.metrics["sweep.jobs_finished"] == 6
    combos = set()
    caches = []
    for child in children:
        assert child.info.status == "FINISHED", job_logs(root)
        assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
        path = client.download_artifacts(child.info.run_id, "report.json", str(tmp_path / "dl"))
        report = EvaluationReport.read_json(Path(path))
        assert set(child.data.metrics) == {key for key, _, _ in report_metrics(report)}
        assert len(report.case_results) == 10 and not report.failed_cases
        combos.add((child.data.params["recipe.chunk_size"], child.data.params["runner.top_k"]))
        caches.append(report.run.cache)
    assert len(combos) == 6
    assert sum(c["written"] for c in caches) == 2  # one entry per chunk size, written once
    assert sum(c["discarded"] for c in caches) == 0
    assert sum(c["hits"] for c in caches) >= 2
    assert sum(c["hits"] + c["misses"] for c in caches) == 6
    assert verify_cache(root / "cache") == (2, 60)


@pytest.mark.slow
def test_two_processes_of_one_configuration(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    gate = tmp_path / "gate"
    args = (
        "runner.limit=10",
        f"evaluator.extra=[{{_target_:tests.faulty_components.WaitsForFile,gate:'{gate}'}}]",
    )
    first = start_cli(root, tmp_path, *args)
    # The first holds the configuration once it evaluates (it logs the benchmark's size);
    # it then waits at the gate.
    assert first.stdout is not None
    logged = []
    for line in first.stdout:
        logged.append(line)
        if "run units" in line:
            break
    assert first.poll() is None, "".join(logged) + first.communicate()[1]
    second = start_cli(root, tmp_path, *args)
    seen = []
    assert second.stdout is not None
    for line in second.stdout:  # the second waits for the first, and says so
        seen.append(line)
        if "another heta-eval process is evaluating this configuration" in line:
            break
    assert second.poll() is None, "".join(seen) + second.communicate()[1]
    gate.touch()
    out, err = first.communicate(timeout=300)
    one = Finished(first.returncode, "".join(logged) + out, err)
    out, err = second.communicate(timeout=300)
    two = Finished(second.returncode, "".join(seen) + out, err)
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    assert "already evaluated" in two.stdout + two.stderr
    assert one.report_path != two.report_path
    report = EvaluationReport.read_json(one.report_path)
    assert len(report.case_results) == 10 and not report.failed_cases
    reused = EvaluationReport.read_json(two.report_path)
    assert reused.case_results == report.case_results and reused.run.reused_from is not None
    assert reused.run.reused_from.report_id == report.report_id
    client = _client(root)
    runs = client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])
    assert {r.info.status for r in runs} == {"FINISHED"} and len(runs) == 2
    (run,) = [r for r in runs if "heta_eval.reused_from.run_id" not in r.data.tags]
    assert set(run.data.metrics) == {key for key, _, _ in report_metrics(report)}
    assert verify_cache(root / "cache") == (1, 10)
