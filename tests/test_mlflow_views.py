"""MLflow views: mode-free headline metrics and `eval.*` params that line runs of different
recipes up, the benchmark as the run's dataset input, the per-case table read back with
mlflow.load_table, and runs loaded as a DataFrame by `load_runs` and `heta-eval-runs`.

One real sweep over two recipes whose query modes differ (bm25: `bm25`; bm25_fusion: `bm25`,
`bm25_exact`, `fusion`) and two depths, `-m recipe=bm25,bm25_fusion runner.top_k=3,5`, writes
the store that every test reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from mlflow import MlflowClient

import heta_eval
from heta_eval.records import EvaluationReport
from heta_eval.tracking.naming import PRIMARY_MODE_TAG, headline_metrics, metric_name
from heta_eval.tracking.runs_frame import (
    RunsError,
    default_columns,
    load_runs,
    select_columns,
    write_frame,
)
from heta_eval.tracking.sweep import SWEEP_ID_FILE
from tests.conftest import user_env

from .test_report_html import run_heta_eval


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Four runs of one sweep (two recipes x two depths) in one MLflow store."""
    cwd = tmp_path_factory.mktemp("mlflow-views")
    sweep = run_heta_eval(cwd, "-m", "recipe=bm25,bm25_fusion", "runner.top_k=3,5")
    assert sweep.returncode == 0, sweep.stderr
    reports = [
        EvaluationReport.read_json(Path(line.removeprefix("report: ")))
        for line in sweep.stdout.splitlines()
        if line.startswith("report: ")
    ]
    root = cwd / "outputs"
    (sweep_dir,) = (root / "multiruns").glob("*/*")
    return {
        "root": root,
        "sweep_dir": sweep_dir,
        "fusion_report": next(
            r for r in reports if r.recipe_manifest["name"] == "bm25_fusion" and r.run.top_k == 5
        ),
        "client": MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}"),
    }


def _runs(store: dict[str, Any]) -> dict[str, Any]:
    """The sweep's runs by recipe and top_k: 'bm25/3', 'bm25/5', 'fusion/3', 'fusion/5'."""
    client = store["client"]
    experiment = client.get_experiment_by_name("heta_eval")
    runs = {}
    for run in client.search_runs([experiment.experiment_id]):
        if run.data.tags.get("heta_eval.kind") == "sweep":
            continue
        recipe = run.data.tags["recipe.name"]
        short = "fusion" if recipe == "bm25_fusion" else recipe
        runs[f"{short}/{run.data.params['eval.top_k']}"] = run
    assert set(runs) == {"bm25/3", "bm25/5", "fusion/3", "fusion/5"}
    return runs


def test_headline_metrics_line_up_runs_of_recipes_with_different_modes(
    store: dict[str, Any],
) -> None:
    runs = _runs(store)
    bm25, fusion = runs["bm25/3"], runs["fusion/5"]
    assert bm25.data.tags[PRIMARY_MODE_TAG] == "bm25"
    assert fusion.data.tags[PRIMARY_MODE_TAG] == "fusion"
    for metric in ("ndcg_at_10", "evidence_recall_at_1", "latency_p50_seconds"):
        # The same column in both runs, equal to each run's primary-mode value.
        assert bm25.data.metrics[metric] == bm25.data.metrics[f"bm25.{metric}"]
        assert fusion.data.metrics[metric] == fusion.data.metrics[f"fusion.{metric}"]
    assert fusion.data.metrics["ndcg_at_10"] != fusion.data.metrics["bm25.ndcg_at_10"]
    assert fusion.data.metrics["ndcg_at_10.ci_low"] <= fusion.data.metrics["ndcg_at_10"]
    eval_params = {k for k in fusion.data.params if k.startswith("eval.")}
    assert (
        eval_params
        == {k for k in bm25.data.params if k.startswith("eval.")}
        == {
            "eval.benchmark",
            "eval.primary_query_mode",
            "eval.query_modes",
            "eval.top_k",
            "eval.cases",
        }
    )
    assert fusion.data.params["eval.query_modes"] == "bm25,bm25_exact,fusion"
    assert bm25.data.params["eval.top_k"] == "3" and fusion.data.params["eval.top_k"] == "5"
    assert bm25.data.params["eval.benchmark"] == fusion.data.params["eval.benchmark"]
    assert fusion.data.params["eval.cases"] == "48"
    for run in (bm25, fusion):
        assert run.data.tags["benchmark.name"] == "sample"


def test_a_recipe_can_name_its_primary_mode(store: dict[str, Any]) -> None:
    report: EvaluationReport = store["fusion_report"]
    assert report.primary_query_mode == "fusion"  # listed last by the recipe
    manifest = {**report.recipe_manifest, "metadata": {"primary_query_mode": "bm25"}}
    chosen = report.model_copy(update={"recipe_manifest": manifest})
    assert chosen.primary_query_mode == "bm25"
    headline = dict(headline_metrics(chosen))
    assert headline["ndcg_at_10"] == report.score_summary["bm25.ndcg@10"]
    unknown = {**report.recipe_manifest, "metadata": {"primary_query_mode": "dense"}}
    assert report.model_copy(update={"recipe_manifest": unknown}).primary_query_mode == "fusion"


def test_the_benchmark_is_the_runs_dataset_input(store: dict[str, Any]) -> None:
    runs = _runs(store)
    inputs = {key: run.inputs.dataset_inputs for key, run in runs.items()}
    datasets = {key: items[0].dataset for key, items in inputs.items()}
    assert {d.name for d in datasets.values()} == {"sample"}
    # Same benchmark and cases, same digest: MLflow shows one dataset across recipes.
    assert len({d.digest for d in datasets.values()}) == 1
    profile = json.loads(datasets["fusion/5"].profile)
    assert profile["benchmark"] == "sample/1/test" and profile["cases"] == 48
    (tag,) = inputs["fusion/5"][0].tags
    assert (tag.key, tag.value) == ("mlflow.data.context", "evaluation")


def test_the_case_table_loads_with_mlflow_load_table(store: dict[str, Any]) -> None:
    run = _runs(store)["fusion/5"]
    code = (
        "import json, sys, mlflow\n"
        "mlflow.set_experiment('heta_eval')\n"
        "t = mlflow.load_table('case_results.json', run_ids=[sys.argv[1]],"
        " extra_columns=['run_id'])\n"
        "print(json.dumps({'columns': list(t.columns), 'rows': len(t),"
        " 'modes': sorted(set(t['query_mode'])), 'ndcg': t['ndcg@10'].mean(),"
        " 'query': t.loc[t['case_id'] == 'astronomy-q01', 'query'].iloc[0]}))\n"
    )
    env = user_env(MLFLOW_TRACKING_URI=f"sqlite:///{store['root'] / 'mlflow.db'}")
    proc = subprocess.run(
        [sys.executable, "-c", code, run.info.run_id],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    table = json.loads(proc.stdout.strip().splitlines()[-1])
    report: EvaluationReport = store["fusion_report"]
    assert table["rows"] == len(report.case_results) == 144
    assert table["modes"] == ["bm25", "bm25_exact", "fusion"]
    assert table["columns"][:4] == ["case_id", "unit_id", "query_mode", "query"]
    assert {"label.difficulty", "label.question_type", "ndcg@10", "evidence_recall@1"} <= set(
        table["columns"]
    )
    assert {"latency_seconds", "error", "top_documents", "run_id"} <= set(table["columns"])
    means = [report.score_summary[f"{m}.ndcg@10"] for m in report.query_modes]
    assert table["ndcg"] == pytest.approx(sum(means) / len(means))
    assert table["query"].startswith("Which of Jupiter's satellites")


def test_load_runs_reads_a_sweep_as_a_dataframe(store: dict[str, Any]) -> None:
    root = store["root"]
    frame = heta_eval.load_runs(sweep_id=store["sweep_dir"], root=root)
    assert isinstance(frame, pd.DataFrame) and len(frame) == 4
    assert sorted(frame["runner.top_k"]) == [3, 3, 5, 5]  # params that are numbers are numbers
    assert frame["runner.top_k"].dtype.kind == "i" and frame["runner.limit"].isna().all()
    runs = _runs(store)
    for _, row in frame.iterrows():
        short = "fusion" if row["recipe.name"] == "bm25_fusion" else "bm25"
        run = runs[f"{short}/{row['runner.top_k']}"]
        assert row["run_id"] == run.info.run_id and row["status"] == "FINISHED"
        assert row["ndcg_at_10"] == run.data.metrics["ndcg_at_10"]
        assert row["bm25.ndcg_at_10"] == run.data.metrics["bm25.ndcg_at_10"]
        assert row["tags.recipe.name"] == row["recipe.name"] == run.data.tags["recipe.name"]
    assert frame["fusion.ndcg_at_10"].isna().tolist() == [
        name == "bm25" for name in frame["recipe.name"]
    ]
    assert list(frame.columns[:6]) == [
        "run_id",
        "run_name",
        "status",
        "start_time",
        "end_time",
        "experiment_id",
    ]
    sweep_id = (store["sweep_dir"] / SWEEP_ID_FILE).read_text().strip()
    assert frame["tags.heta_eval.sweep_id"].unique().tolist() == [sweep_id]
    same = load_runs(sweep_id=sweep_id, root=root, include_sweep_parents=True)
    assert len(same) == 5 and (same["tags.heta_eval.kind"] == "sweep").sum() == 1

    everything = load_runs(root=root, prefixes=True)
    assert len(everything) == 4  # every run of the experiment, sweep parents left out
    assert {"params.recipe.name", "metrics.ndcg_at_10"} <= set(everything.columns)
    fusion = everything[
        (everything["tags.recipe.name"] == "bm25_fusion") & (everything["params.runner.top_k"] == 5)
    ]
    assert fusion["metrics.ndcg_at_10"].tolist() == [
        pytest.approx(store["fusion_report"].score_summary["fusion.ndcg@10"])
    ]


def test_load_runs_explains_what_is_missing(store: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(RunsError, match=r"no MLflow store at .*mlflow\.db"):
        load_runs(root=tmp_path)
    with pytest.raises(RunsError, match=r"no experiment 'nope' .* experiments: .*heta_eval"):
        load_runs("nope", root=store["root"])
    with pytest.raises(RunsError, match="no runs of sweep 'abc'"):
        load_runs(sweep_id="abc", root=store["root"])


def _runs_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = user_env()
    return subprocess.run(
        [sys.executable, "-m", "heta_eval.cli.runs", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_heta_eval_runs_prints_and_writes_the_table(store: dict[str, Any], tmp_path: Path) -> None:
    root = str(store["root"])
    shown = _runs_cli("--root", root, "--sweep", str(store["sweep_dir"]))
    assert shown.returncode == 0, shown.stderr
    assert "4 runs" in shown.stdout
    runs = _runs(store)
    for run in runs.values():
        assert run.info.run_name in shown.stdout
        assert f"{run.data.metrics['ndcg_at_10']:.4f}" in shown.stdout
    # The params the sweep set, other params that differ (no locations), headline metrics.
    shown_columns = default_columns(load_runs(sweep_id=store["sweep_dir"], root=root))
    assert shown_columns[:4] == ["run_name", "status", "recipe.name", "runner.top_k"]
    assert "ndcg_at_10" in shown_columns and "latency_p95_seconds" in shown_columns
    assert not [c for c in shown_columns if "dir" in c or c.startswith(("paths.", "tracking."))]

    csv = tmp_path / "runs.csv"
    written = _runs_cli("--root", root, "--output", str(csv))
    assert written.returncode == 0, written.stderr
    assert written.stdout.startswith("4 runs, ") and str(csv) in written.stdout
    frame = pd.read_csv(csv)
    assert len(frame) == 4 and set(frame["tags.recipe.name"]) == {"bm25", "bm25_fusion"}
    assert set(frame["eval.primary_query_mode"]) == {"bm25", "fusion"}
    assert sorted(frame["ndcg_at_10"]) == sorted(
        r.data.metrics["ndcg_at_10"] for r in runs.values()
    )

    # --columns PATTERN... picks columns by shell pattern, in the frame's order.
    picked = select_columns(frame, ["run_name", "ndcg_at_1?", "runner.top_?"])
    assert picked == ["run_name", "ndcg_at_10", "runner.top_k"]
    missing = _runs_cli("--root", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no MLflow store at" in missing.stderr


def test_runs_are_written_as_parquet_and_json(store: dict[str, Any], tmp_path: Path) -> None:
    frame = load_runs(root=store["root"])
    parquet = write_frame(frame, tmp_path / "runs.parquet")
    assert pd.read_parquet(parquet)["ndcg_at_10"].tolist() == frame["ndcg_at_10"].tolist()
    records = json.loads(write_frame(frame, tmp_path / "runs.json").read_text())
    assert [r["run_id"] for r in records] == frame["run_id"].tolist()
    with pytest.raises(RunsError, match=r"expected a \.csv, \.parquet or \.json file"):
        write_frame(frame, tmp_path / "runs.xlsx")


def test_metric_names_stay_mlflow_safe() -> None:
    assert metric_name("ndcg@10") == "ndcg_at_10"
    assert metric_name("fusion.evidence_recall@5.ci_low") == "fusion.evidence_recall_at_5.ci_low"
