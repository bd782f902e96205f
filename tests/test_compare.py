"""`heta-eval-compare`: paired tests checked against direct computations, on real SciFact runs,
synthetic reports with known answers, and a real MLflow sweep."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from heta_eval import BenchmarkRunner, EvaluationReport, KnowledgeRecipe, RunnerSettings
from heta_eval.benchmarks import BeirBenchmark
from heta_eval.cli.compare import main
from heta_eval.compare import (
    MCNEMAR,
    RANDOMIZATION,
    CompareError,
    compare_reports,
    load_reports,
    randomization_test,
    write_outputs,
)
from heta_eval.evaluators.summary import summarize
from heta_eval.records import BenchmarkManifest, EvaluationCaseResult, EvaluationScore, RunFacts

from .conftest import CliRunner, load_recipe, user_env

UNDETERMINED = "?"


def _compare_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = user_env()
    env["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    return subprocess.run(
        [sys.executable, "-m", "heta_eval.cli.compare", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _score(name: str, value: float | str | None) -> EvaluationScore:
    if value == UNDETERMINED:
        return EvaluationScore(name=name, value=None, undetermined=True)
    if value is None:
        return EvaluationScore(name=name, value=None, skipped_reason="does not apply")
    return EvaluationScore(name=name, value=float(value))


def synthetic_report(
    name: str, metrics: dict[str, list], case_ids: list[str] | None = None
) -> EvaluationReport:
    """A report over cases c0, c1, … (unit u, mode bm25) with the given per-case values."""
    n = len(next(iter(metrics.values())))
    ids = case_ids or [f"c{i}" for i in range(n)]
    results = [
        EvaluationCaseResult(
            case_id=case_id,
            unit_id="u",
            query_mode="bm25",
            query=f"question {case_id}",
            scores=tuple(_score(m, values[i]) for m, values in metrics.items()),
        )
        for i, case_id in enumerate(ids)
    ]
    summary, details = summarize(results, ["bm25"], list(metrics))
    now = datetime.now(UTC)
    return EvaluationReport(
        report_id=name,
        benchmark=BenchmarkManifest(name="synthetic"),
        knowledge_base_name=f"synthetic-{name}",
        knowledge_base_manifests=(),
        recipe_manifest={"name": name},
        query_modes=("bm25",),
        score_summary=summary,
        score_details=details,
        case_results=tuple(results),
        started_at=now,
        finished_at=now,
        run=RunFacts(
            top_k=10,
            evaluators=tuple(metrics),
            cases={"total": n, "evaluated": n, "failed": 0, "scored": n},
        ),
    )


def direct_holm(pvalues: list[float]) -> list[float]:
    m = len(pvalues)
    order = np.argsort(pvalues, kind="stable")
    adjusted = np.minimum(1.0, (m - np.arange(m)) * np.asarray(pvalues)[order])
    adjusted = np.maximum.accumulate(adjusted)
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()


# --- synthetic reports: known answers, fast ------------------------------------------------


def _binary_pair() -> tuple[EvaluationReport, EvaluationReport]:
    # 7 cases the baseline gets and the other misses (b), 2 the other way round (c),
    # 10 both get, 8 neither gets; then one case skipped by the other run and one
    # undetermined in the baseline (both excluded from the pairs).
    base = [1] * 7 + [0] * 2 + [1] * 10 + [0] * 8 + [1, UNDETERMINED]
    other = [0] * 7 + [1] * 2 + [1] * 10 + [0] * 8 + [None, 1]
    rng = np.random.default_rng(7)
    graded_base = rng.random(len(base)).round(3).tolist()
    graded_other = (np.asarray(graded_base) + rng.normal(0.05, 0.1, len(base))).round(3)
    return (
        synthetic_report("a", {"hit@1": base, "ndcg@10": graded_base}),
        synthetic_report("b", {"hit@1": other, "ndcg@10": graded_other.tolist()}),
    )


def test_mcnemar_on_binary_scores_uses_the_discordant_pairs() -> None:
    a, b = _binary_pair()
    comparison = compare_reports([a, b])
    assert comparison.baseline == "a #0" and comparison.cases == 29
    hit = comparison.row("bm25.hit@1").cell("b #1")
    assert hit.test == MCNEMAR
    assert hit.p_value == pytest.approx(binomtest(7, 9, 0.5).pvalue, rel=1e-12)
    assert (hit.wins, hit.losses, hit.ties) == (2, 7, 18)
    assert hit.paired == 27 and hit.excluded == 2
    assert hit.difference == pytest.approx((2 - 7) / 27)
    baseline = comparison.row("bm25.hit@1").cell("a #0")
    assert baseline.mean == pytest.approx(a.score_summary["bm25.hit@1"]) and baseline.scored == 28
    assert baseline.p_value is None and baseline.difference is None
    graded = comparison.row("bm25.ndcg@10").cell("b #1")
    assert graded.test == RANDOMIZATION and graded.paired == 29 and graded.excluded == 0


def test_randomization_p_value_matches_the_exact_permutation_distribution() -> None:
    diffs = np.array([0.3, -0.1, 0.25, 0.4, 0.0, 0.15, -0.2, 0.35, 0.05, 0.1, -0.05, 0.2])
    observed = abs(diffs.mean())
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(diffs))))
    exact = float(np.mean(np.abs(signs @ diffs / len(diffs)) >= observed - 1e-12))
    estimate = randomization_test(diffs, resamples=200_000, seed=3)
    assert estimate == pytest.approx(exact, abs=0.01)
    assert randomization_test(diffs, 1000, seed=3) == randomization_test(diffs, 1000, seed=3)
    assert randomization_test(np.zeros(5), 1000, seed=0) == 1.0
    # Every flip as extreme as the observed one (a single case): p = 1 exactly.
    assert randomization_test([0.5], 999, seed=0) == 1.0


def test_holm_is_taken_over_every_comparison_of_the_table() -> None:
    a, b = _binary_pair()
    c = synthetic_report("c", {"hit@1": [1] * 29, "ndcg@10": [0.5] * 29})
    comparison = compare_reports([a, b, c], baseline="b #1", resamples=2000)
    assert [r.label for r in comparison.runs] == ["a #0", "b #1", "c #2"]
    cells = [cell for row in comparison.rows for cell in row.cells if cell.p_value is not None]
    assert comparison.comparisons == len(cells) == 4
    raw = [cell.p_value for cell in cells]
    assert [cell.p_holm for cell in cells] == pytest.approx(direct_holm(raw))
    ranked = sorted(cells, key=lambda cell: cell.p_value)
    assert all(x.p_holm <= y.p_holm for x, y in itertools.pairwise(ranked))
    assert all(cell.significant == (cell.p_holm < 0.05) for cell in cells)


def test_runs_over_different_cases_or_too_few_runs_are_refused() -> None:
    a = synthetic_report("a", {"hit@1": [1, 0, 1, 1]})
    shifted = synthetic_report("b", {"hit@1": [1, 0, 1, 1]}, ["c2", "c3", "c4", "c5"])
    with pytest.raises(CompareError) as refused:
        compare_reports([a, shifted])
    message = str(refused.value)
    assert "do not cover the same cases" in message
    assert "2 only in 'a #0' (e.g. u/c0/bm25, u/c1/bm25)" in message
    assert "2 only in 'b #1' (e.g. u/c4/bm25, u/c5/bm25)" in message
    with pytest.raises(CompareError, match="need at least two runs to compare, got 1"):
        compare_reports([a])
    with pytest.raises(CompareError, match=r"unknown metric 'mrr@10' .*bm25\.hit@1"):
        compare_reports([a, a], metrics=["mrr@10"])


def test_outputs_hold_the_table_plots_and_every_number(tmp_path: Path) -> None:
    comparison = compare_reports(list(_binary_pair()), resamples=2000)
    paths = write_outputs(comparison, tmp_path / "out")
    assert {p.name for p in paths.values()} == {
        "comparison.md",
        "comparison.html",
        "comparison.json",
    }
    markdown = paths["markdown"].read_text()
    assert "| metric | a #0 (baseline) | b #1 |" in markdown and "McNemar" in markdown
    page = paths["html"].read_text()
    assert page.count('src="data:image/png;base64,') == 2 and "http" not in page
    numbers = json.loads(paths["json"].read_text())
    assert numbers["baseline"] == "a #0" and numbers["metrics"] == ["bm25.hit@1", "bm25.ndcg@10"]
    assert numbers["rows"][0]["cells"][1]["p_value"] == comparison.rows[0].cells[1].p_value


def test_cli_errors_are_one_line_and_the_baseline_can_be_chosen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _binary_pair()
    first = a.write_json(tmp_path / "a" / "report.json")
    b.write_json(tmp_path / "b" / "report.json")

    def fails(*args: str) -> str:
        with pytest.raises(SystemExit) as exited:
            main([*args, "--out", str(tmp_path / "out")])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        return err

    assert "no such report: nowhere.json" in fails("nowhere.json", str(first))
    assert "need at least two runs to compare, got 1" in fails(str(first))
    assert "unknown metric 'recall@5'" in fails(
        str(first), str(tmp_path / "b"), "--metrics", "recall@5"
    )
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    assert "no MLflow store at" in fails(str(first), "0" * 32, "--tracking-uri", missing)

    def succeeds(*args: str) -> tuple[str, dict]:
        with pytest.raises(SystemExit) as exited:
            main([*args, "--out", str(tmp_path / "out"), "--resamples", "500"])
        assert exited.value.code == 0
        return capsys.readouterr().out, json.loads(
            (tmp_path / "out" / "comparison.json").read_text()
        )

    out, numbers = succeeds(str(tmp_path / "a"), str(tmp_path / "b"))
    assert "a (a) (baseline)" in out and "McNemar" in out
    assert f"html: {tmp_path / 'out' / 'comparison.html'}" in out
    assert numbers["baseline"] == "a (a)" and numbers["resamples"] == 500
    for baseline in ("1", str(tmp_path / "b"), "b (b)"):
        _, numbers = succeeds(str(first), str(tmp_path / "b"), "--baseline", baseline)
        assert numbers["baseline"] == "b (b)"
        assert [r["label"] for r in numbers["runs"]] == ["a (a)", "b (b)"]
    _, numbers = succeeds(str(first), str(first), "--metrics", "hit_at_1")
    assert [r["label"] for r in numbers["runs"]] == ["a (a) #1", "a (a) #2"]
    (cell,) = [c for c in numbers["rows"][0]["cells"] if c["run"] == "a (a) #2"]
    assert numbers["metrics"] == ["bm25.hit@1"] and cell["p_value"] == 1.0
    assert cell["difference"] == 0 and cell["ties"] == 28 and cell["excluded"] == 1


def test_importing_compare_loads_no_mlflow_scipy_or_matplotlib() -> None:
    heavy = "{'mlflow', 'scipy', 'matplotlib'}"
    code = f"import sys, heta_eval.cli.compare; print(sorted({heavy} & set(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


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
        first, second = row.cell(runs[0].label), row.cell(runs[1].label)
        assert first.mean == pytest.approx(base.score_summary[row.metric], abs=1e-12)
        assert second.mean == pytest.approx(other.score_summary[row.metric], abs=1e-12)
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
    tested = [row.cell(runs[1].label) for row in comparison.rows]
    assert [c.p_holm for c in tested] == pytest.approx(direct_holm([c.p_value for c in tested]))
    ranked = sorted(tested, key=lambda c: c.p_value)
    assert all(a.p_holm <= b.p_holm for a, b in itertools.pairwise(ranked))
    assert any(0.1 < c.p_value < 0.9 for c in tested)  # the ±0.01 check above is not vacuous


@pytest.mark.slow
def test_cli_compares_two_report_files(scifact_reports: tuple[Path, Path], tmp_path: Path) -> None:
    proc = _compare_cli(
        *(str(p) for p in scifact_reports), "--out", str(tmp_path / "cmp"), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "bm25 (k1_1.2) (baseline)" in proc.stdout and "bm25.ndcg@10" in proc.stdout
    assert "Holm" in proc.stdout and "randomization" in proc.stdout
    for name in ("comparison.md", "comparison.html", "comparison.json"):
        assert f"{tmp_path / 'cmp' / name}" in proc.stdout
    page = (tmp_path / "cmp" / "comparison.html").read_text()
    numbers = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert page.count('src="data:image/png;base64,') == len(numbers["metrics"]) == 5
    assert '<table id="comparison">' in page and "bm25.recall@100" in page
    cell = numbers["rows"][0]["cells"][1]
    assert 0 < cell["p_value"] <= 1 and cell["test"] == RANDOMIZATION
    assert "| bm25.ndcg@10 |" in (tmp_path / "cmp" / "comparison.md").read_text()


# --- a real MLflow sweep ---------------------------------------------------------------------


def test_a_sweep_parent_run_expands_to_its_children_and_gets_the_outputs(
    run_cli: CliRunner, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlflow import MlflowClient

    sweep = run_cli("-m", "recipe.chunk_size=16,32")
    assert sweep.returncode == 0, sweep.stderr
    uri = f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("heta_eval").experiment_id
    runs = client.search_runs([experiment], order_by=["attributes.start_time ASC"])
    (parent,) = [r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]

    proc = _compare_cli(
        parent.info.run_id, "--tracking-uri", uri, "--out", str(tmp_path / "cmp"), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    numbers = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert [r["run_id"] for r in numbers["runs"]] == [r.info.run_id for r in children]
    assert [r["label"] for r in numbers["runs"]] == [
        "#0 sample/bm25 chunk_size=16",
        "#1 sample/bm25 chunk_size=32",
    ]
    assert numbers["cases"] == 48 and "bm25.evidence_recall@1" in numbers["metrics"]
    assert f"logged to MLflow sweep run {parent.info.run_id}" in proc.stdout
    logged = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"comparison.md", "comparison.html", "comparison.json"} <= logged

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
