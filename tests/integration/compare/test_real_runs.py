"""`heta-eval-compare` on real runs, in this process: two SciFact BM25 runs checked against
direct computations, and a recipe sweep (bm25, bm25_fusion, hybrid on a subset of the sample)
compared from its MLflow parent run, read back with MlflowClient."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from heta_eval import BenchmarkRunner, EvaluationReport, KnowledgeRecipe, RunnerSettings
from heta_eval.benchmarks import BeirBenchmark
from heta_eval.cli.compare import main
from heta_eval.compare import MCNEMAR, RANDOMIZATION, compare_reports, load_reports

from ...cli_in_process import CliResult
from ...compare_helpers import direct_holm
from ...conftest import InProcessCli, job_logs, load_recipe

# --- two real SciFact runs: BM25 k1=1.2 against k1=0.5 -------------------------------------


def _scifact_run(scifact_dir: Path, out: Path, k1: float) -> Path:
    spec = load_recipe().model_dump()
    spec["indexes"]["bm25"]["k1"] = k1
    bench = BeirBenchmark(dataset="scifact", data_root=scifact_dir)
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=KnowledgeRecipe.model_validate(spec),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(output_dir=out, store_dir=out.parent / "store"),
    )
    return asyncio.run(runner.run()).write_json(out / "report.json")


@pytest.fixture(scope="module")
def scifact_reports(
    scifact_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("compare")
    return (
        _scifact_run(scifact_dir, tmp / "k1_1.2", 1.2),
        _scifact_run(scifact_dir, tmp / "k1_0.5", 0.5),
    )


@pytest.fixture
def compare(cli: InProcessCli, monkeypatch: pytest.MonkeyPatch) -> InProcessCli:
    """`heta-eval-compare ARGS` in this process, in the terminal a user reads it in: 120
    columns, whatever the test process was given."""
    monkeypatch.setenv("COLUMNS", "120")

    def run(*args: str) -> CliResult:
        return cli(*args, program="heta-eval-compare")

    return run


def _values(report: EvaluationReport, metric: str) -> dict[tuple[str, str, str], float | None]:
    mode, _, name = metric.partition(".")
    return {
        (r.unit_id, r.case_id, r.query_mode): r.score(name)
        for r in report.case_results
        if r.query_mode == mode
    }


@pytest.mark.slow
def test_scifact_comparison_agrees_with_direct_computation(
    scifact_reports: tuple[Path, Path],
) -> None:
    runs = load_reports([str(p) for p in scifact_reports])
    assert [r.label for r in runs] == ["bm25 (k1_1.2)", "bm25 (k1_0.5)"]
    base, other = (r.report for r in runs)
    comparison = compare_reports(runs, resamples=20_000, seed=0)
    assert comparison.cases == 300
    assert set(comparison.metrics) == set(base.score_summary)
    for row in comparison.rows:
        first, second = row.mean(runs[0].label), row.test(runs[1].label)
        assert first.mean == pytest.approx(base.score_summary[row.metric], abs=1e-12)
        assert row.mean(runs[1].label).mean == pytest.approx(
            other.score_summary[row.metric], abs=1e-12
        )
        assert second.baseline == runs[0].label and row.modes == ("bm25", "bm25")
        x, y = _values(base, row.metric), _values(other, row.metric)
        diffs = np.array([y[k] - x[k] for k in sorted(x)])
        assert second.paired == 300 and second.excluded == 0
        assert second.difference == pytest.approx(diffs.mean(), abs=1e-12)
        assert (second.wins, second.losses, second.ties) == (
            int(np.sum(diffs > 0)),
            int(np.sum(diffs < 0)),
            int(np.sum(diffs == 0)),
        )
        binary = all(v in (0.0, 1.0) for v in [*x.values(), *y.values()])
        assert second.test == (MCNEMAR if binary else RANDOMIZATION)
        # An independent Monte Carlo estimate: other seed, other sign draws, 10x resamples.
        signs = np.random.default_rng(12345).choice([-1.0, 1.0], size=(200_000, len(diffs)))
        extreme = np.abs((signs * diffs).mean(axis=1)) >= abs(diffs.mean()) - 1e-12
        independent = (extreme.sum() + 1) / (len(signs) + 1)
        assert second.p_value == pytest.approx(independent, abs=0.01)
    tested = [row.test(runs[1].label) for row in comparison.rows]
    assert [c.p_holm for c in tested] == pytest.approx(direct_holm([c.p_value for c in tested]))
    ranked = sorted(tested, key=lambda c: c.p_value)
    assert all(a.p_holm <= b.p_holm for a, b in itertools.pairwise(ranked))
    assert any(0.1 < c.p_value < 0.9 for c in tested)  # the ±0.01 check above is not vacuous


@pytest.mark.slow
def test_cli_compares_two_report_files(
    scifact_reports: tuple[Path, Path], compare: InProcessCli, tmp_path: Path
) -> None:
    proc = compare(*(str(p) for p in scifact_reports), "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    assert "bm25 (k1_1.2) (baseline)" in proc.stdout and "bm25.ndcg@10" in proc.stdout
    assert "Holm" in proc.stdout and "(rand)" in proc.stdout  # randomization, abbreviated
    for name in ("comparison.md", "comparison.html", "comparison.json"):
        assert f"{tmp_path / 'cmp' / name}" in proc.stdout
    page = (tmp_path / "cmp" / "comparison.html").read_text()
    numbers = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert page.count('src="data:image/png;base64,') == len(numbers["metrics"]) == 5
    assert '<div id="means">' in page and 'alt="bm25.recall@100"' in page
    cell = numbers["rows"][0]["tests"][0]
    assert 0 < cell["p_value"] <= 1 and cell["test"] == RANDOMIZATION
    assert "| bm25.ndcg@10 |" in (tmp_path / "cmp" / "comparison.md").read_text()


# --- a real MLflow recipe sweep: bm25, bm25_fusion and hybrid on a subset of the sample -----


def _reports(client: object, runs: list, dest: Path) -> dict[str, EvaluationReport]:
    """Each run's report.json artifact, read back from MLflow, by recipe name."""
    found = {}
    for run in runs:
        local = client.download_artifacts(run.info.run_id, "report.json", str(dest))  # type: ignore[attr-defined]
        report = EvaluationReport.read_json(Path(local))
        found[str(report.recipe_manifest["name"])] = report
    return found


def _by_case(report: EvaluationReport, mode: str, metric: str) -> dict[tuple[str, str], float]:
    return {
        (r.unit_id, r.case_id): r.score(metric)
        for r in report.case_results
        if r.query_mode == mode and r.score(metric) is not None
    }


@pytest.mark.slow
def test_a_recipe_sweep_compares_from_its_parent_run_with_the_baseline_named(
    cli: InProcessCli,
    compare: InProcessCli,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mlflow import MlflowClient

    sweep = cli("-m", "recipe=bm25,bm25_fusion,hybrid", "runner.limit=12")
    assert sweep.returncode == 0, sweep.stderr[-3000:] + job_logs(tmp_path / "outputs")
    uri = f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("heta_eval").experiment_id
    runs = client.search_runs([experiment], order_by=["attributes.start_time ASC"])
    (parent,) = [r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    reports = _reports(client, children, tmp_path / "artifacts")
    assert set(reports) == {"bm25", "bm25_fusion", "hybrid"}

    # One command from the parent id, with the baseline named by its override.
    cmp = tmp_path / "cmp"
    proc = compare(
        parent.info.run_id,
        "--baseline",
        "recipe=bm25",
        "--tracking-uri",
        uri,
        "--out",
        str(cmp),
    )
    assert proc.returncode == 0, proc.stderr
    assert "3 runs · 12 paired cases · baseline recipe=bm25" in proc.stdout
    assert "recipe=bm25_fusion: query mode fusion (its primary mode)" in proc.stdout
    assert "recipe=hybrid: query mode hybrid (its primary mode)" in proc.stdout
    assert "Downloading artifacts" not in proc.stderr
    numbers = json.loads((cmp / "comparison.json").read_text())
    assert [r["run_id"] for r in numbers["runs"]] == [r.info.run_id for r in children]
    labels = [r["label"] for r in numbers["runs"]]
    assert sorted(labels) == ["recipe=bm25", "recipe=bm25_fusion", "recipe=hybrid"]
    assert numbers["baseline"] == "recipe=bm25" and numbers["cases"] == 12
    assert "ndcg@10" in numbers["metrics"] and numbers["comparisons"] == 2 * len(numbers["metrics"])
    modes = {"recipe=bm25": "bm25", "recipe=bm25_fusion": "fusion", "recipe=hybrid": "hybrid"}
    (ndcg,) = [row for row in numbers["rows"] if row["metric"] == "ndcg@10"]
    assert ndcg["modes"] == [modes[label] for label in labels]
    base = _by_case(reports["bm25"], "bm25", "ndcg@10")
    for test in ndcg["tests"]:
        assert test["baseline"] == "recipe=bm25" and test["baseline_mode"] == "bm25"
        mode = modes[test["run"]]
        other = _by_case(reports[test["run"].removeprefix("recipe=")], mode, "ndcg@10")
        assert test["run_mode"] == mode and set(other) == set(base)
        diffs = np.array([other[k] - base[k] for k in sorted(base)])
        assert test["paired"] == 12 and test["difference"] == pytest.approx(diffs.mean())
        assert test["wins"] == int(np.sum(diffs > 0)) and test["losses"] == int(np.sum(diffs < 0))
    for mean in ndcg["means"]:
        report = reports[mean["run"].removeprefix("recipe=")]
        assert mean["mean"] == pytest.approx(report.score_summary[f"{mean['query_mode']}.ndcg@10"])
    assert f"logged to MLflow sweep run {parent.info.run_id}" in proc.stdout
    logged = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"comparison.md", "comparison.html", "comparison.json"} <= logged

    # Every run has a bm25 mode: all pairs under it. bm25_fusion's bm25 index is bm25's.
    proc = compare(
        parent.info.run_id,
        "--metrics",
        "bm25.ndcg@10",
        "--all-pairs",
        "--no-log-to-mlflow",
        "--tracking-uri",
        uri,
        "--out",
        str(tmp_path / "pairs"),
    )
    assert proc.returncode == 0, proc.stderr
    numbers = json.loads((tmp_path / "pairs" / "comparison.json").read_text())
    (row,) = numbers["rows"]
    assert numbers["metrics"] == ["bm25.ndcg@10"] and row["modes"] == ["bm25"] * 3
    assert numbers["all_pairs"] and numbers["comparisons"] == len(row["tests"]) == 3
    (same,) = [t for t in row["tests"] if {t["run"], t["baseline"]} == set(labels[:2])]
    assert same["difference"] == 0 and same["ties"] == 12 and same["p_value"] == 1.0

    # Two child run ids, with a mode named per run.
    by_label = dict(zip(labels, (r.info.run_id for r in children), strict=True))
    proc = compare(
        by_label["recipe=bm25"],
        by_label["recipe=bm25_fusion"],
        "--metrics",
        "bm25.ndcg@10:bm25_exact.ndcg@10",
        "--tracking-uri",
        uri,
        "--out",
        str(tmp_path / "two"),
    )
    assert proc.returncode == 0, proc.stderr
    numbers = json.loads((tmp_path / "two" / "comparison.json").read_text())
    assert numbers["metrics"] == ["bm25.ndcg@10:bm25_exact.ndcg@10"]
    assert numbers["rows"][0]["modes"] == ["bm25", "bm25_exact"]
    assert [r["label"] for r in numbers["runs"]] == ["recipe=bm25", "recipe=bm25_fusion"]

    # Run directories by path: labels from the overrides Hydra saved next to each report.
    dirs = {
        d.parent.name: d.parent
        for d in (tmp_path / "outputs" / "multiruns").glob("*/*/*/report.json")
    }
    hybrid_dir = next(
        d for d in dirs.values() if "recipe=hybrid" in (d / ".hydra" / "overrides.yaml").read_text()
    )
    # A full run against the hybrid subset: 12 of its 48 cases are shared.
    full = cli("recipe=bm25", "tracking=none")
    assert full.returncode == 0, full.stderr[-3000:]
    (full_dir,) = [p.parent for p in (tmp_path / "outputs" / "runs").glob("*/*/report.json")]
    proc = compare(str(full_dir), str(hybrid_dir), "--out", str(tmp_path / "x"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        "heta-eval-compare: only 12 of the 48 cases of run 'recipe=bm25 limit=null' are "
        "in every compared run (25%, below --min-overlap 0.5); 36 would be left out"
    )
    proc = compare(
        str(full_dir),
        str(hybrid_dir),
        "--min-overlap",
        "0.25",
        "--out",
        str(tmp_path / "sub"),
    )
    assert proc.returncode == 0, proc.stderr
    numbers = json.loads((tmp_path / "sub" / "comparison.json").read_text())
    assert [r["label"] for r in numbers["runs"]] == [
        "recipe=bm25 limit=null",
        "recipe=hybrid limit=12",
    ]
    assert [(r["cases"], r["left_out"]) for r in numbers["runs"]] == [(48, 36), (12, 0)]
    said = " ".join(proc.stdout.split())  # wrapped at 120 columns
    assert numbers["cases"] == 12 and "of its 48 cases are not in every run" in said

    # A plain run id is one run; unknown ids and runs without a report are refused.
    bare = client.create_run(experiment, run_name="no report")
    client.set_terminated(bare.info.run_id)
    child = children[0].info.run_id
    for other, message in (
        (bare.info.run_id, f"MLflow run {bare.info.run_id} (no report) has no report.json"),
        ("f" * 32, f"unknown MLflow run id {'f' * 32} in {uri}"),
    ):
        with pytest.raises(SystemExit) as exited:
            main([child, other, "--tracking-uri", uri, "--out", str(tmp_path / "no")])
        err = capsys.readouterr().err
        assert exited.value.code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "no").exists()
