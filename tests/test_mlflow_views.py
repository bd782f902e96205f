"""MLflow views: mode-free headline metrics and `eval.*` params that line runs of different
recipes up, the benchmark as the run's dataset input, the per-case table read back with
mlflow.load_table, and runs loaded as a DataFrame by `load_runs` and `heta-eval-runs`.

One real sweep over two recipes whose query modes differ (bm25: `bm25`; bm25_fusion: `bm25`,
`bm25_exact`, `fusion`) and two depths, `-m recipe=bm25,bm25_fusion runner.top_k=3,5`, writes
the store that every test reads.
"""

from __future__ import annotations

import getpass
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from mlflow import MlflowClient

import heta_eval
from heta_eval.benchmarks.sample import SAMPLE_DATA
from heta_eval.code_identity import git_commit
from heta_eval.records import EvaluationReport
from heta_eval.results.runs_frame import (
    RunsError,
    default_columns,
    load_runs,
    select_columns,
    write_frame,
)
from heta_eval.sweep.callback import SUMMARY_TABLE, SWEEP_ID_FILE
from heta_eval.tracking.naming import (
    MAX_RUN_NAME,
    PRIMARY_MODE_TAG,
    headline_metrics,
    metric_name,
    run_name,
    table_column,
    viewer_columns,
    viewer_renders,
)
from heta_eval.tracking.run_context import NOTE_TAG, describe_experiment, without_credentials
from tests.conftest import run_heta_eval, user_env


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
        "stdout": sweep.stdout,
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
    for metric in ("ndcg_at_10", "evidence_recall_at_1"):
        # The same column in both runs, equal to each run's primary-mode value.
        assert bm25.data.metrics[metric] == bm25.data.metrics[f"bm25.{metric}"]
        assert fusion.data.metrics[metric] == fusion.data.metrics[f"fusion.{metric}"]
    # Latencies are named for how they were measured: BM25's queries in one batch (a mean
    # per query, no percentiles), the fusion's one at a time (percentiles).
    metric = "latency_mean_batched_seconds"
    assert bm25.data.metrics[metric] == bm25.data.metrics[f"bm25.{metric}"]
    assert f"bm25.{metric}" in fusion.data.metrics and metric not in fusion.data.metrics
    assert bm25.data.metrics["bm25.latency_batch_size"] == 48
    for metric in ("latency_p50_seconds", "latency_p95_seconds"):
        assert fusion.data.metrics[metric] == fusion.data.metrics[f"fusion.{metric}"]
        assert metric not in bm25.data.metrics and f"bm25.{metric}" not in bm25.data.metrics
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
    assert {"label_difficulty", "label_question_type", "ndcg@10", "evidence_recall@1"} <= set(
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


def _runs_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in user_env(**(env or {})).items() if env or k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "heta_eval.cli.runs", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow
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


# -- what MLflow's UI shows -------------------------------------------------------------------


def _viewer_cells(columns: list[str], data: list[list[Any]]) -> list[list[Any]]:
    """The cells MLflow 3.17's logged-table viewer shows: it turns each row into one flat
    object ({column: value}, values that are not text as JSON) and reads every column by
    TanStack Table's `accessorKey`, which takes a name with a dot for a nested path."""
    shown = []
    for row in data:
        record = {
            c: v if isinstance(v, str) else json.dumps(v) for c, v in zip(columns, row, strict=True)
        }
        cells = []
        for column in columns:
            value: Any = record
            for part in column.split(".") if "." in column else [column]:
                value = value.get(part) if isinstance(value, dict) else None
            cells.append(value)
        shown.append(cells)
    return shown


def test_the_viewer_rule_catches_a_dotted_column() -> None:
    assert _viewer_cells(["label.difficulty", "ndcg@10"], [["easy", 1.0]]) == [[None, "1.0"]]
    assert not viewer_renders("label.difficulty") and viewer_renders("label_difficulty")
    assert table_column("bm25.ndcg_at_10") == "bm25_ndcg_at_10"
    # Two names that would meet keep apart.
    assert list(viewer_columns({"a_b": [1], "a.b": [2], "a__b": [3]})) == ["a_b", "a__b", "a__b_2"]


def test_every_table_artifact_shows_every_column_in_mlflows_viewer(
    store: dict[str, Any], tmp_path: Path
) -> None:
    client = store["client"]
    experiment = client.get_experiment_by_name("heta_eval")
    seen: dict[str, int] = {}
    for run in client.search_runs([experiment.experiment_id]):
        logged = json.loads(run.data.tags.get("mlflow.loggedArtifacts", "[]"))
        for item in (i for i in logged if i["type"] == "table"):
            dest = tmp_path / run.info.run_id
            dest.mkdir(exist_ok=True)
            path = Path(client.download_artifacts(run.info.run_id, item["path"], str(dest)))
            table = json.loads(path.read_text())
            bad = [c for c in table["columns"] if not viewer_renders(c)]
            assert not bad, f"{item['path']} of {run.info.run_name}: {bad}"
            expected = [
                [v if isinstance(v, str) else json.dumps(v) for v in row] for row in table["data"]
            ]
            assert _viewer_cells(table["columns"], table["data"]) == expected
            seen[item["path"]] = seen.get(item["path"], 0) + 1
    assert seen == {"case_results.json": 4, "sweep_summary.json": 1, "sweep_best.json": 1}


def _parent(store: dict[str, Any]) -> Any:
    client = store["client"]
    experiment = client.get_experiment_by_name("heta_eval")
    (parent,) = client.search_runs(
        [experiment.experiment_id], filter_string="tags.`heta_eval.kind` = 'sweep'"
    )
    return parent


def test_every_run_has_mlflows_source_tags_and_the_experiment_a_description(
    store: dict[str, Any],
) -> None:
    client = store["client"]
    experiment = client.get_experiment_by_name("heta_eval")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 5  # the parent and its four jobs
    commit = git_commit()
    for run in runs:
        tags = run.data.tags
        assert tags["mlflow.user"] == getpass.getuser()
        assert tags["mlflow.source.type"] == "LOCAL"
        # The command run, not the tracker worker that created the run.
        assert tags["mlflow.source.name"] == "python -m heta_eval"
        if commit:
            assert tags["mlflow.source.git.commit"] == commit
    note = experiment.tags["mlflow.note.content"]
    assert "`sample/1/test`" in note and "heta-eval-compare" in note
    assert experiment.tags["heta_eval.benchmarks"] == "sample/1/test"


def test_a_description_someone_wrote_is_kept(tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    ours = client.create_experiment("ours", artifact_location=(tmp_path / "a").as_uri())
    describe_experiment(client, ours, "sample/1/test")
    describe_experiment(client, ours, "beir-scifact/1/test")
    tags = client.get_experiment(ours).tags
    assert tags["heta_eval.benchmarks"] == "beir-scifact/1/test, sample/1/test"
    assert "`beir-scifact/1/test`, `sample/1/test`" in tags["mlflow.note.content"]
    theirs = client.create_experiment(
        "theirs", artifact_location=(tmp_path / "b").as_uri(), tags={NOTE_TAG: "my notes"}
    )
    describe_experiment(client, theirs, "sample/1/test")
    tags = client.get_experiment(theirs).tags
    assert tags[NOTE_TAG] == "my notes" and tags["heta_eval.benchmarks"] == "sample/1/test"


def test_a_repository_url_loses_its_credentials() -> None:
    assert (
        without_credentials("https://user:ghp_x@github.com/o/r.git") == "https://github.com/o/r.git"
    )
    assert without_credentials("git@github.com:o/r.git") == "git@github.com:o/r.git"


def test_the_sweep_parent_shows_best_score_means_with_their_own_ci(
    store: dict[str, Any], tmp_path: Path
) -> None:
    parent = _parent(store)
    children = list(_runs(store).values())
    metrics, tags = parent.data.metrics, parent.data.tags
    best = {k.removeprefix("best/") for k in metrics if k.startswith("best/")}
    means = {m for m in best if not m.endswith((".ci_low", ".ci_high"))}
    assert {"ndcg_at_10", "bm25.ndcg_at_10", "fusion.ndcg_at_10", "bm25_exact.ndcg_at_10"} <= means
    assert best == {f"{m}{s}" for m in means for s in ("", ".ci_low", ".ci_high")}
    for mean in means:  # scores only: no statistics, counts, caches, latencies or slices
        assert not mean.startswith(("cache.", "kb.", "cases.", "slice/")), mean
        assert "latency" not in mean and mean.rsplit(".", 1)[-1] not in ("std", "scored"), mean
        having = [r for r in children if mean in r.data.metrics]
        top = max(r.data.metrics[mean] for r in having)
        assert metrics[f"best/{mean}"] == top
        winners = [r for r in having if r.data.metrics[mean] == top]
        assert any(
            metrics[f"best/{mean}.ci_low"] == r.data.metrics[f"{mean}.ci_low"]
            and metrics[f"best/{mean}.ci_high"] == r.data.metrics[f"{mean}.ci_high"]
            for r in winners
        ), mean
    assert not [t for t in tags if t.startswith("best/")]
    assert tags["heta_eval.headline_metric"] == "ndcg_at_10"
    note = tags["mlflow.note.content"]  # the run's description in the UI
    assert note.startswith("heta_eval sweep of 4 job(s) (4 finished, 0 failed) over `recipe`")
    assert re.search(r"Best `ndcg_at_10`: job #\d \(`recipe=.*`\) 0\.\d{4} \[0\.\d{3}", note)
    by_id = {r.info.run_id: r for r in children}
    assert (
        by_id[tags["heta_eval.best_run_id"]].data.metrics["ndcg_at_10"]
        == metrics["best/ndcg_at_10"]
    )
    # What the viewer shows first tells the jobs apart: number, differing overrides, headline.
    path = store["client"].download_artifacts(parent.info.run_id, SUMMARY_TABLE, str(tmp_path))
    columns = json.loads(Path(path).read_text())["columns"]
    assert columns[:7] == [
        "job",
        "recipe",
        "runner_top_k",
        "ndcg_at_10",
        "ndcg_at_10_ci_low",
        "ndcg_at_10_ci_high",
        "status",
    ]
    path = store["client"].download_artifacts(parent.info.run_id, "sweep_best.json", str(tmp_path))
    table = json.loads(Path(path).read_text())
    rows = {r[0]: dict(zip(table["columns"], r, strict=True)) for r in table["data"]}
    assert set(rows) == means
    for mean, row in rows.items():
        # (The table keeps 10 digits, MLflow's log_table's JSON.)
        assert by_id[row["run_id"]].data.metrics[mean] == metrics[f"best/{mean}"]
        assert row["best"] == pytest.approx(metrics[f"best/{mean}"], abs=1e-9)
        assert row["ci_low"] == pytest.approx(metrics[f"best/{mean}.ci_low"], abs=1e-9)
        assert row["job"] in (0, 1, 2, 3) and row["overrides"]


def test_a_sweep_ends_with_its_jobs_and_the_compare_command(store: dict[str, Any]) -> None:
    out = store["stdout"]
    parent = _parent(store)
    for num in range(4):  # each job's table says which job it is
        header = next(line for line in out.splitlines() if line.startswith(f"job #{num}: "))
        assert re.fullmatch(r"job #\d: recipe=bm25(_fusion)? runner\.top_k=[35]", header.strip())
    jobs = out[out.index("sweep: 4 job(s), 4 finished, 0 failed") :].splitlines()
    head = next(line for line in jobs if "job" in line and "recipe" in line)
    for column in ("recipe", "runner.top_k", "primary mode", "ndcg_at_10", "CI", "status"):
        assert column in head
    assert "paths.root" not in head  # the same for every job: not a column
    runs = _runs(store)
    for key, run in runs.items():
        recipe = "bm25_fusion" if key.startswith("fusion") else "bm25"
        top_k = key.rsplit("/", 1)[1]
        value = run.data.metrics["ndcg_at_10"]
        low, high = run.data.metrics["ndcg_at_10.ci_low"], run.data.metrics["ndcg_at_10.ci_high"]
        assert any(
            re.search(
                rf"#\d .* {recipe} .* {top_k} .* {run.data.tags[PRIMARY_MODE_TAG]} .* "
                rf"{value:.4f} .* \[{low:.3f}, {high:.3f}\] .* FINISHED",
                line,
            )
            for line in jobs
        ), key
    assert f"compare the jobs: heta-eval-compare {parent.info.run_id}" in jobs


def test_run_names_are_short_and_say_what_differs() -> None:
    overrides = ["paths.root=/x", "recipe=bm25", "recipe.chunk_size=64", "runner.top_k=5"]
    assert run_name("sample", "bm25", [*overrides, "runner.progress=off"]) == (
        "sample/bm25 chunk_size=64 top_k=5"
    )
    # A key's last part only where it names one override.
    both = ["recipe.indexes.bm25.k1=1.2", "recipe.fusions.fusion.k1=60"]
    assert run_name("s", "r", both) == "s/r recipe.indexes.bm25.k1=1.2 recipe.fusions.fusion.k1=60"
    # A sweep's job leads with its number, which MLflow's narrow name column keeps.
    assert run_name("sample", "bm25", overrides, job=2) == "#2 sample/bm25 chunk_size=64 top_k=5"
    long = run_name("beir-scifact", "hybrid", [f"recipe.x{i}={'9' * 20}" for i in range(5)])
    assert len(long) == MAX_RUN_NAME and long.endswith("…")


@pytest.mark.slow
def test_heta_eval_runs_fits_the_width_and_keeps_the_column_order(store: dict[str, Any]) -> None:
    root = str(store["root"])
    shown = _runs_cli("--root", root)  # piped: 120 columns
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120
    for run in _runs(store).values():
        assert len(run.info.run_name) <= 40 and run.info.run_name in shown.stdout
        job = run.data.tags["heta_eval.sweep_job"]
        assert run.info.run_name.startswith(f"#{job} sample/")
    header = next(line for line in lines if "run_name" in line)
    assert re.search(r"run_name .* status .* recipe\.name .* runner\.top_k .* ndcg_at_10", header)
    narrow = _runs_cli("--root", root, env={"COLUMNS": "80"})
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80
    table, _, left_out = narrow.stdout.partition("not shown (80 columns wide): ")
    header = next(line for line in table.splitlines() if "run_name" in line)
    frame = load_runs(root=root)
    for column in default_columns(frame):  # each shown, or named as left out
        assert column in header or column in " ".join(left_out.split()), column
    assert left_out and "--columns" in left_out

    asked = _runs_cli("--root", root, "--columns", "ndcg_at_10", "run_name", "runner.top_?")
    assert asked.returncode == 0, asked.stderr
    header = next(line for line in asked.stdout.splitlines() if "run_name" in line)
    assert header.index("ndcg_at_10") < header.index("run_name") < header.index("runner.top_k")
    missing = _runs_cli("--root", root, "--columns", "run_name", "ndcg_at_11")
    assert missing.returncode == 2
    assert "--columns 'ndcg_at_11' matches no column; similar: ndcg_at_10" in missing.stderr


@pytest.mark.slow
def test_heta_eval_runs_gives_each_benchmark_its_own_table(tmp_path: Path) -> None:
    documents, cases = tmp_path / "documents.jsonl", tmp_path / "cases.jsonl"
    shutil.copy(SAMPLE_DATA / "documents.jsonl", documents)
    shutil.copy(SAMPLE_DATA / "cases.jsonl", cases)
    for args in (
        ["runner.limit=8"],
        ["benchmark=jsonl", f"benchmark.documents={documents}", f"benchmark.cases={cases}"],
    ):
        proc = run_heta_eval(tmp_path, "runner.progress=off", *args)
        assert proc.returncode == 0, proc.stderr
    shown = _runs_cli("--root", str(tmp_path / "outputs"))
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "2 runs of 2 benchmarks: one table each" in out
    sections = re.split(r"(?m)^(?=1 run · benchmark )", out)[1:]
    by_key = {part.splitlines()[0].removeprefix("1 run · benchmark "): part for part in sections}
    assert set(by_key) == {"sample/1/test", "jsonl/1/test"}
    frame = load_runs(root=tmp_path / "outputs")
    for key, part in by_key.items():
        (value,) = frame.loc[frame["eval.benchmark"] == key, "ndcg_at_10"]
        rows = [line for line in part.splitlines() if line.startswith("│")]
        assert len(rows) == 1 and f"{value:.4f}" in rows[0]
