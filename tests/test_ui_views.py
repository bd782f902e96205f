"""What users meet in MLflow and the terminal (issue 24): one real sweep logged to the store
MLFLOW_TRACKING_URI names, read back as the user reads it: with MlflowClient, and with
`heta-eval-runs` / `heta-eval-compare` run with no flags at COLUMNS=120.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from heta_eval.records import EvaluationReport
from heta_eval.tracking.ui_links import runs_table_url
from tests.conftest import REPO, user_env

WIDTH = 120
PATH_LIKE = re.compile(r"(^|[\s=])(/|~/)\S")


def _run(cwd: Path, env: dict[str, str], *args: str, timeout: float = 600) -> Any:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`heta-eval -m recipe.chunk_size=null,128` with MLFLOW_TRACKING_URI set and another
    `paths.root`, from a directory that has no ./outputs."""
    cwd = tmp_path_factory.mktemp("ui-views")
    store = cwd / "team" / "mlflow.db"
    store.parent.mkdir()
    uri = f"sqlite:///{store}"
    # A heta-eval cache of the module's own: the stores it remembers are this module's. The
    # session's would also list those of every module this worker ran before (up to 20,
    # servers killed since among them), and a lookup of an unknown run id tries each.
    env = user_env(
        MLFLOW_TRACKING_URI=uri,
        COLUMNS=str(WIDTH),
        PYTHONWARNINGS="ignore::DeprecationWarning",
        HETA_EVAL_CACHE=str(cwd / "cache"),
    )
    root = cwd / "elsewhere"
    proc = _run(
        cwd, env, "-m", "heta_eval", "-m", f"paths.root={root}", "recipe.chunk_size=null,128"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = MlflowClient(uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "heta_eval"]
    runs = client.search_runs([experiment.experiment_id])
    parent = next(r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep")
    children = sorted(
        (r for r in runs if r is not parent), key=lambda r: r.data.tags["heta_eval.sweep_job"]
    )
    reports = [
        EvaluationReport.read_json(Path(line.removeprefix("report: ")))
        for line in proc.stdout.splitlines()
        if line.startswith("report: ")
    ]
    return {
        "cwd": cwd,
        "env": env,
        "uri": uri,
        "root": root,
        "proc": proc,
        "client": client,
        "experiment": experiment.experiment_id,
        "parent": parent,
        "children": children,
        "reports": {r.run.tracking.run_id: r for r in reports},
    }


def test_the_sweep_logs_to_mlflow_tracking_uri(sweep: dict[str, Any]) -> None:
    assert len(sweep["children"]) == 2
    assert not (sweep["root"] / "mlflow.db").exists()  # the store the variable names, only


def test_run_names_say_what_differs_and_no_paths(sweep: dict[str, Any]) -> None:
    names = [r.info.run_name for r in sweep["children"]]
    assert names == ["#0 sample/bm25 chunk_size=null", "#1 sample/bm25 chunk_size=128"]
    assert sweep["parent"].info.run_name == "sweep sample/bm25 chunk_size=null,128"
    for run in [sweep["parent"], *sweep["children"]]:
        assert not PATH_LIKE.search(run.info.run_name), run.info.run_name
    # Overrides as typed, without Hydra's escapes, in the tag.
    assert "\\" not in sweep["children"][0].data.tags["heta_eval.overrides"]


def test_every_run_starts_no_later_than_its_evaluation(sweep: dict[str, Any]) -> None:
    for run in sweep["children"]:
        report = sweep["reports"][run.info.run_id]
        started_ms = report.started_at.timestamp() * 1000
        assert run.info.start_time <= started_ms, (run.info.start_time, started_ms)
        assert run.info.end_time >= report.finished_at.timestamp() * 1000 - 1


def test_the_parent_shows_the_best_jobs_headline(sweep: dict[str, Any]) -> None:
    best = max(r.data.metrics["ndcg_at_10"] for r in sweep["children"])
    metrics = sweep["parent"].data.metrics
    assert metrics["ndcg_at_10"] == pytest.approx(best)
    assert metrics["Headline/ndcg_at_10"] == pytest.approx(best)
    for run in sweep["children"]:
        # The chart view's first group: MLflow orders groups by prefix, prefix-less last.
        got = run.data.metrics
        assert got["Headline/ndcg_at_10"] == got["ndcg_at_10"]
        assert got["Headline/ndcg_at_10.ci_low"] == got["ndcg_at_10.ci_low"]


def test_params_are_yaml_values(sweep: dict[str, Any]) -> None:
    params = sweep["children"][0].data.params
    assert params["recipe.chunk_size"] == "null"
    assert params["recipe.query_modes"] == "[bm25]"
    assert "True" not in params.values() and "False" not in params.values()
    # The run's own directory is where it wrote, a tag: not a param that differs every run.
    assert "runner.output_dir" not in params
    assert Path(sweep["children"][0].data.tags["heta_eval.run_dir"]).is_dir()


def test_the_runs_table_url_is_printed(sweep: dict[str, Any]) -> None:
    url = runs_table_url("http://127.0.0.1:5000", sweep["experiment"], "ndcg_at_10")
    out = sweep["proc"].stdout
    assert f"runs table: {url}" in out  # after each job and after the sweep
    assert out.rstrip().endswith(url)
    assert "orderByKey=metrics.%60ndcg_at_10%60&orderByAsc=false" in url


def test_the_case_table_puts_the_primary_mode_first_with_reasons(sweep: dict[str, Any]) -> None:
    client = sweep["client"]
    run = sweep["children"][0]
    path = client.download_artifacts(run.info.run_id, "case_results.json", str(sweep["cwd"]))
    table = json.loads(Path(path).read_text())
    columns = table["columns"]
    assert "not_scored" in columns
    modes = [row[columns.index("query_mode")] for row in table["data"]]
    assert modes[0] == run.data.tags["heta_eval.primary_query_mode"]
    for row in table["data"]:
        for metric in ("ndcg@10", "evidence_recall@1"):
            value = row[columns.index(metric)]
            assert value != "null" and (value == "" or isinstance(value, float | int))


def test_runs_shows_the_headline_and_no_paths_with_no_flags(sweep: dict[str, Any]) -> None:
    proc = _run(sweep["cwd"], sweep["env"], "-m", "heta_eval.cli.runs")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    header = next(line for line in lines if "run_name" in line)
    assert "ndcg_at_10" in header and "chunk_size" in header
    assert "#1 sample/bm25 chunk_size=128" in proc.stdout
    assert str(sweep["root"]) not in proc.stdout and "paths.root" not in proc.stdout


@pytest.mark.slow
def test_compare_the_parent_with_no_flags(sweep: dict[str, Any]) -> None:
    parent = sweep["parent"].info.run_id
    proc = _run(sweep["cwd"], sweep["env"], "-m", "heta_eval.cli.compare", parent)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= WIDTH, max(lines, key=len)
    assert "baseline chunk_size=null" in proc.stdout
    tests = lines[next(i for i, x in enumerate(lines) if x.startswith("paired tests")) :]
    assert any("│ chunk_size=128 " in line for line in tests)
    assert "…" not in proc.stdout  # nothing cut


@pytest.mark.slow
def test_compare_finds_the_store_the_run_was_logged_to(
    sweep: dict[str, Any], tmp_path: Path
) -> None:
    """Without MLFLOW_TRACKING_URI or a flag, the run is looked up in the stores heta-eval
    wrote to (the heta-eval cache of the module's runs remembers them)."""
    env = {k: v for k, v in sweep["env"].items() if k != "MLFLOW_TRACKING_URI"}
    parent = sweep["parent"].info.run_id
    proc = _run(tmp_path, env, "-m", "heta_eval.cli.compare", parent, "--no-log-to-mlflow")
    assert proc.returncode == 0, proc.stderr
    assert f"run {parent} found in {sweep['uri']}" in proc.stderr
    missing = _run(tmp_path, env, "-m", "heta_eval.cli.compare", "0" * 32)
    assert missing.returncode == 2
    assert "unknown MLflow run id 00000000000000000000000000000000" in missing.stderr
    assert sweep["uri"] in missing.stderr  # says where it looked


def test_the_sweep_table_fits_120_columns(sweep: dict[str, Any]) -> None:
    out = sweep["proc"].stdout
    table = out[out.index("sweep: 2 job(s)") : out.index("parent run:")]
    assert max(len(line) for line in table.splitlines()) <= WIDTH
    assert "paths.root" not in table and str(sweep["root"]) not in table


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("recipe=bm52", "recipe=bm52: no such recipe; did you mean recipe=bm25"),
        ("top_k=5", "top_k: no such key; did you mean runner.top_k?"),
        ("recipe.chunk_size=-5", "recipe.chunk_size: Input should be greater than 0"),
    ],
)
def test_invalid_configuration_exits_2_and_writes_nothing(
    tmp_path: Path, override: str, expected: str
) -> None:
    env = user_env(COLUMNS=str(WIDTH), PYTHONWARNINGS="ignore::DeprecationWarning")
    root = tmp_path / "outputs"
    proc = _run(tmp_path, env, "-m", "heta_eval", f"paths.root={root}", override)
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert not root.exists(), sorted(str(p) for p in root.rglob("*"))


def test_a_search_for_a_score_the_run_does_not_produce_stops_before_trial_0(
    tmp_path: Path,
) -> None:
    env = user_env(COLUMNS=str(WIDTH), PYTHONWARNINGS="ignore::DeprecationWarning")
    root = tmp_path / "outputs"
    proc = _run(
        tmp_path,
        env,
        *("-m", "heta_eval", "-m", f"paths.root={root}", "hparams_search=bm25_optuna"),
        *("optimized_metric=bm25.ndcg@100", "hydra.sweeper.n_trials=2"),
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "invalid configuration of the search; no trial was run" in proc.stderr
    assert "'bm25.ndcg@10'" in proc.stderr  # what to choose instead
    assert "Traceback" not in proc.stderr and not root.exists()


@pytest.mark.slow
def test_every_shipped_recipe_reaches_mlflow_whole(tmp_path: Path, caplog: Any) -> None:
    """Each conf/recipe/*.yaml: every setting logged under a name MLflow takes, read back
    with MlflowClient, the original config path recovered from it; no `MLflow refused`."""
    from omegaconf import OmegaConf

    from heta_eval.config.compose import compose_config
    from heta_eval.tracking.mlflow_tracker import MlflowTracker
    from heta_eval.tracking.naming import flat_params, key_problem, original_param_key

    recipes = sorted(p.stem for p in (REPO / "conf" / "recipe").glob("*.yaml"))
    assert "uda_baseline" in recipes
    tracker = MlflowTracker(root=tmp_path)
    client = MlflowClient(tracker.uri)
    for name in recipes:
        cfg = compose_config([f"recipe={name}", f"paths.root={tmp_path}"])
        recipe = OmegaConf.to_container(cfg.recipe, resolve=True)
        config = {"recipe": recipe}
        flat = flat_params(config)
        assert all(key_problem(k) is None for k in flat), name
        caplog.clear()
        tracker.run_id = None
        tracker.start(run_name=name, config=config, tags={}, run_dir=tmp_path / name)
        assert "MLflow refused" not in caplog.text and not tracker.offline, caplog.text
        logged = client.get_run(tracker.run_id).data.params
        assert logged == flat, name
        tracker.end()
        # Every key read back names the setting it came from.
        leaves = {".".join(map(str, path)) for path in _leaf_paths(recipe, ("recipe",))}
        assert {original_param_key(k) for k in logged} == leaves, name
    uda = client.search_runs(
        [tracker.experiment_id()], filter_string="attributes.run_name = 'uda_baseline'"
    )[0]
    assert uda.data.params["recipe.parser.parsers.text:2F:2A._target_"] == (
        "heta_eval.kb.PlainTextParser"
    )
    key = "recipe.parser.parsers.application:2Fvnd.heta.segments:2Bjson._target_"
    assert uda.data.params[key] == "heta_eval.kb.SegmentsJsonParser"


def _leaf_paths(node: Any, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    if isinstance(node, dict) and node:
        return [p for k, v in node.items() for p in _leaf_paths(v, (*prefix, str(k)))]
    return [prefix]


@pytest.mark.slow
def test_a_reused_result_is_said_and_logs_none_of_the_originals_costs(tmp_path: Path) -> None:
    env = user_env(COLUMNS=str(WIDTH), PYTHONWARNINGS="ignore::DeprecationWarning")
    root = tmp_path / "outputs"
    args = ("-m", "heta_eval", f"paths.root={root}", "runner.limit=5")
    first, again = _run(tmp_path, env, *args), _run(tmp_path, env, *args)
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    runs = client.search_runs(
        [client.get_experiment_by_name("heta_eval").experiment_id],
        order_by=["attributes.start_time ASC"],
    )
    original, reused = (r.data.metrics for r in runs)
    assert original["run.reused"] == 0 and "kb.build_seconds" in original
    assert reused["run.reused"] == 1 and reused["ndcg_at_10"] == original["ndcg_at_10"]
    assert not [k for k in reused if k.startswith(("cache.", "kb.build_seconds"))]
    html = next(
        Path(line.removeprefix("html report: ")).read_text()
        for line in again.stdout.splitlines()
        if line.startswith("html report: ")
    )
    assert "Reused result" in html and runs[0].info.run_id in html


def test_info_fits_120_columns(tmp_path: Path) -> None:
    env = user_env(COLUMNS=str(WIDTH))
    proc = _run(tmp_path, env, "-m", "heta_eval.cli.info")
    assert proc.returncode == 0, proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) <= WIDTH
    # A long description goes on under its own start, not past the width.
    lines = proc.stdout.splitlines()
    judge = next(i for i, line in enumerate(lines) if line.startswith("  llm_judge "))
    start = lines[judge].index("The benchmark's")
    assert lines[judge + 1][:start].isspace() and lines[judge + 1][start] != " "
