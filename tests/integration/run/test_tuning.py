"""Honest tuning end to end: `heta-eval -m hparams_search=bm25_optuna` tunes on the tuning
part, evaluates the best parameters once on the test part, and links both in MLflow.

`heta-eval -m ...` called in this process (the Optuna sweeper); the MLflow store it writes
is read back with MlflowClient, the reports from the run directories.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from mlflow import MlflowClient

from heta_eval.records import EvaluationReport
from heta_eval.sweep.callback import SUMMARY_TABLE
from heta_eval.sweep.end import BEST_RUN_TAG
from heta_eval.sweep.tuning import (
    PART_TAG,
    RESULTS_FILE,
    SWEEP_RUN_TAG,
    TEST_RUN_TAG,
    final_overrides,
    typed_params,
)

from ...cli_in_process import CliResult, call_cli
from ...conftest import job_logs

RECALL = "bm25.evidence_recall@1"

# Optuna's storage module uses SQLAlchemy 1.x's `declarative_base` when imported (optuna's,
# not ours to fix; a user's run prints the warning, this process would raise it).
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:optuna.*")


def _store(root: Path) -> tuple[MlflowClient, list[Any]]:
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("heta_eval")
    return client, client.search_runs([experiment.experiment_id])


@pytest.fixture
def search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> Callable[..., CliResult]:
    """`heta-eval -m ARGS` in this process, outputs under tmp_path/outputs; its output caught
    at the file descriptors, since the search runs its test part as a process of its own."""

    def run(*overrides: str) -> CliResult:
        args = ["-m", f"paths.root={tmp_path / 'outputs'}", *overrides]
        return call_cli("heta-eval", args, cwd=tmp_path, monkeypatch=monkeypatch, capsys=capfd)

    return run


def _report(path: Path) -> EvaluationReport:
    return EvaluationReport.model_validate_json(path.read_text())


@pytest.mark.slow
def test_search_tunes_on_a_held_out_part_and_tests_the_best_once(
    search: Callable[..., CliResult], tmp_path: Path
) -> None:
    proc = search("hparams_search=bm25_optuna", "hydra.sweeper.n_trials=3")
    root = tmp_path / "outputs"
    assert proc.returncode == 0, proc.stderr + job_logs(root)
    client, runs = _store(root)
    (parent,) = [r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep"]
    trials = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    (test,) = [r for r in runs if r.data.tags.get(PART_TAG) == "test"]
    assert len(runs) == 5 and len(trials) == 3
    assert parent.info.status == "FINISHED" and parent.data.params["sweep.sweeper"] == "optuna"
    assert parent.data.params["recipe.indexes.bm25.k1"] == "interval(0.5, 2.0)"
    assert all(r.info.status == "FINISHED" for r in [*trials, test])
    for trial in trials:
        assert 0.5 <= float(trial.data.params["recipe.indexes.bm25.k1"]) <= 2.0
        assert 0.3 <= float(trial.data.params["recipe.indexes.bm25.b"]) <= 1.0
        assert trial.data.params["recipe.chunk_size"] in {"null", "64", "128"}
    assert all(r.data.params["eval.benchmark"] == "sample/1/test-tuning" for r in trials)
    assert test.data.params["eval.benchmark"] == "sample/1/test-heldout"

    # The two parts: disjoint halves of the 48 questions.
    sweep_dir = Path(parent.data.tags["heta_eval.sweep_dir"])
    trial_reports = [_report(p) for p in sorted(sweep_dir.glob("[0-9]*/report.json"))]
    test_report = _report(sweep_dir / "test" / "report.json")
    tune_ids = {r.case_id for r in trial_reports[0].case_results}
    test_ids = {r.case_id for r in test_report.case_results}
    assert len(tune_ids) == len(test_ids) == 24 and not tune_ids & test_ids
    assert all({r.case_id for r in t.case_results} == tune_ids for t in trial_reports)

    # Best parameters keep their types, and the test run used exactly them.
    results = yaml.safe_load((sweep_dir / RESULTS_FILE).read_text())
    best = results["best_params"]
    assert isinstance(best["recipe.indexes.bm25.k1"], float)
    assert best["recipe.chunk_size"] is None or type(best["recipe.chunk_size"]) is int
    assert test_report.recipe_manifest["chunk_size"] == best["recipe.chunk_size"]
    k1 = float(test.data.params["recipe.indexes.bm25.k1"])
    assert k1 == pytest.approx(best["recipe.indexes.bm25.k1"])
    metric = "bm25.evidence_recall_at_1"
    best_value = max(r.data.metrics[metric] for r in trials)
    assert results["best_value"] == pytest.approx(best_value)
    # The search's objective is the sweep's headline: its best trial is the one tagged.
    assert parent.data.metrics[f"best/{metric}"] == pytest.approx(best_value)
    assert parent.data.tags["heta_eval.headline_metric"] == metric
    winners = {r.info.run_id for r in trials if r.data.metrics[metric] == best_value}
    assert parent.data.tags[BEST_RUN_TAG] in winners
    test_score = test_report.score_details[RECALL]
    assert results["test"]["value"] == pytest.approx(test_score.mean)
    assert results["test"]["cases"] == 24 and results["tuning"]["cases"] == 24
    assert results["test"]["benchmark"] == "sample/1/test-heldout"
    assert results["test"]["mlflow_run_id"] == test.info.run_id

    # Linked in MLflow both ways; the test run is not one of the search's trials.
    assert "mlflow.parentRunId" not in test.data.tags
    assert test.data.tags[SWEEP_RUN_TAG] == parent.info.run_id
    parent = client.get_run(parent.info.run_id)
    assert parent.data.tags[TEST_RUN_TAG] == test.info.run_id
    assert parent.data.metrics[f"test/{metric}"] == pytest.approx(test.data.metrics[metric])
    assert parent.data.metrics[f"test/{metric}.ci_low"] == pytest.approx(test_score.ci_low)
    logged = client.download_artifacts(parent.info.run_id, RESULTS_FILE, str(tmp_path / "dl"))
    assert yaml.safe_load(Path(logged).read_text())["test"]["value"] == results["test"]["value"]
    assert SUMMARY_TABLE in {a.path for a in client.list_artifacts(parent.info.run_id)}

    # The console says which part each number is on.
    out = proc.stdout
    assert "sample/1/test-tuning · recipe bm25" in out
    assert "sample/1/test-heldout · recipe bm25" in out
    assert (
        "tuning part: sample/1/test-tuning, 24 cases: a seeded 50% of the 'test' queries, "
        "seed 0 (no tuning split); the rest is held out for the test\n  best "
        f"{RECALL} = {results['best_value']:.4f} ["
    ) in out
    assert (
        "test part:   sample/1/test-heldout, 24 cases: the 50% of the 'test' queries held "
        f"out from tuning, seed 0\n  {RECALL} = {test_score.mean:.4f} "
        f"[{test_score.ci_low:.4f}, {test_score.ci_high:.4f}], the best parameters evaluated once"
    ) in out
    assert f"best parameters: {json.dumps(best)}" in out


@pytest.mark.slow
def test_search_on_scifact_tunes_on_train_qrels_and_tests_on_test_qrels(
    search: Callable[..., CliResult], tmp_path: Path, scifact_dir: Path
) -> None:
    proc = search(
        "hparams_search=bm25_optuna",
        "hydra.sweeper.n_trials=2",
        "benchmark=beir",
        f"benchmark.data_root={scifact_dir}",
        "optimized_metric=bm25.ndcg@10",
        "runner.limit=40",
    )
    root = tmp_path / "outputs"
    assert proc.returncode == 0, proc.stderr + job_logs(root)
    _, runs = _store(root)
    (test,) = [r for r in runs if r.data.tags.get(PART_TAG) == "test"]
    assert test.data.params["eval.benchmark"] == "beir-scifact/1.0/test"
    trials = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(trials) == 2
    assert all(r.data.params["eval.benchmark"] == "beir-scifact/1.0/train" for r in trials)
    out = proc.stdout
    assert "tuning part: beir-scifact/1.0/train, 40 cases: the 'train' qrels; the 'test'" in out
    assert "test part:   beir-scifact/1.0/test, 40 cases: the 'test' qrels, never used" in out


def test_best_parameters_are_parsed_as_the_trials_got_them() -> None:
    raw = {"recipe.chunk_size": "null", "k1": 0.73, "n": 64, "name": "abc", "flag": "true"}
    assert typed_params(raw) == {
        "recipe.chunk_size": None,
        "k1": 0.73,
        "n": 64,
        "name": "abc",
        "flag": True,
    }


def test_the_test_run_replaces_the_searched_keys_with_the_best_values(tmp_path: Path) -> None:
    task = [
        "hparams_search=bm25_optuna",
        "recipe.chunk_size=64,128",  # a search dimension given on the command line
        "tuning.part=tune",
        "paths.root=/out",
    ]
    best = {"recipe.chunk_size": "null", "recipe.indexes.bm25.k1": 1.1}
    assert final_overrides(task, best, tmp_path / "test") == [
        "hparams_search=bm25_optuna",
        "paths.root=/out",
        "recipe.chunk_size=null",
        "recipe.indexes.bm25.k1=1.1",
        "++tuning.part=test",
        f"hydra.run.dir='{tmp_path / 'test'}'",
    ]
