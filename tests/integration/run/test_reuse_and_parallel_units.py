"""A finished configuration is not evaluated again: the rerun reuses its result as a tracked
run of its own, with the first run's scores and none of its costs; units evaluated in worker
processes give what sequential units give. In this process (`cli`, `BenchmarkRunner`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval import BenchmarkRunner, EvaluationReport, RunnerSettings
from heta_eval.benchmarks import SampleBenchmark

from ...conftest import InProcessCli, load_recipe


def _by_case(report: EvaluationReport) -> dict[tuple[str, str, str], tuple]:
    return {
        (r.unit_id, r.case_id, r.query_mode): (r.scores, tuple(i.id for i in r.retrieved), r.error)
        for r in report.case_results
    }


@pytest.mark.slow  # three evaluations, two of them reused or loaded from the cache
def test_a_finished_configuration_is_not_evaluated_again(cli: InProcessCli, tmp_path: Path) -> None:
    first = cli("runner.limit=5")
    assert first.returncode == 0, first.stderr
    again = cli("runner.limit=5")
    logs = again.stdout + again.stderr
    assert again.returncode == 0 and "already evaluated" in logs
    assert "unit corpus" not in logs  # nothing built, nothing queried
    forced = cli("runner.limit=5", "runner.resume=false")
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
    first_metrics, second_metrics = dict(original.data.metrics), dict(reused.data.metrics)
    assert (first_metrics.pop("run.reused"), second_metrics.pop("run.reused")) == (0, 1)
    costs = ("cache.", "kb.build_seconds")
    assert not [k for k in second_metrics if k.startswith(costs)]
    assert second_metrics == {k: v for k, v in first_metrics.items() if not k.startswith(costs)}
    assert reused.info.status == "FINISHED"


@pytest.mark.slow  # two evaluations, one in worker processes
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
