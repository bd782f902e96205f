"""`heta-eval-compare` statistics, pairing and labels on reports with known answers: paired
tests checked against direct computations, primary query modes, per-run modes, cases of one
run only, all pairs, and the CLI's errors."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from heta_eval import EvaluationReport
from heta_eval.cli.compare import main
from heta_eval.compare import (
    MCNEMAR,
    RANDOMIZATION,
    CompareError,
    compare_reports,
    load_reports,
    randomization_test,
)
from heta_eval.compare.labels import differing_labels, split_overrides
from heta_eval.compare.render import pairing_lines
from heta_eval.evaluators.statistics import bootstrap_ci

from .compare_helpers import binary_pair, direct_holm, modes_report, synthetic_report

# --- synthetic reports: known answers, fast ------------------------------------------------


def test_mcnemar_on_binary_scores_uses_the_discordant_pairs() -> None:
    a, b = binary_pair()
    comparison = compare_reports([a, b])
    assert comparison.baseline == "a #0" and comparison.cases == 29
    hit = comparison.row("bm25.hit@1").test("b #1")
    assert hit.baseline == "a #0" and (hit.run_mode, hit.baseline_mode) == ("bm25", "bm25")
    assert hit.test == MCNEMAR
    assert hit.p_value == pytest.approx(binomtest(7, 9, 0.5).pvalue, rel=1e-12)
    assert (hit.wins, hit.losses, hit.ties) == (2, 7, 18)
    assert hit.paired == 27 and hit.excluded == 2
    assert hit.difference == pytest.approx((2 - 7) / 27)
    baseline = comparison.row("bm25.hit@1").mean("a #0")
    assert baseline.mean == pytest.approx(a.score_summary["bm25.hit@1"]) and baseline.scored == 28
    assert len(comparison.row("bm25.hit@1").tests) == 1  # the baseline is not tested
    graded = comparison.row("bm25.ndcg@10").test("b #1")
    assert graded.test == RANDOMIZATION and graded.paired == 29 and graded.excluded == 0
    # The difference's CI is the seeded percentile bootstrap of the paired differences,
    # taken in the order of the cases' keys.
    x, y = ({r.case_id: r.score("ndcg@10") for r in run.case_results} for run in (a, b))
    diffs = [y[k] - x[k] for k in sorted(x)]
    assert (graded.ci_low, graded.ci_high) == pytest.approx(bootstrap_ci(diffs, 10_000, 0.95, 0))
    assert graded.ci_low < graded.difference < graded.ci_high


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
    a, b = binary_pair()
    c = synthetic_report("c", {"hit@1": [1] * 29, "ndcg@10": [0.5] * 29})
    comparison = compare_reports([a, b, c], baseline="b #1", resamples=2000)
    assert [r.label for r in comparison.runs] == ["a #0", "b #1", "c #2"]
    tests = [t for row in comparison.rows for t in row.tests if t.p_value is not None]
    assert comparison.comparisons == len(tests) == 4
    assert {t.baseline for t in tests} == {"b #1"}
    raw = [t.p_value for t in tests]
    assert [t.p_holm for t in tests] == pytest.approx(direct_holm(raw))
    ranked = sorted(tests, key=lambda t: t.p_value)
    assert all(x.p_holm <= y.p_holm for x, y in itertools.pairwise(ranked))
    assert all(t.significant == (t.p_holm < 0.05) for t in tests)


def test_all_pairs_are_tested_with_holm_over_every_pair_and_metric() -> None:
    rng = np.random.default_rng(11)
    base = rng.random(40)
    runs = [
        synthetic_report(name, {"ndcg@10": (base + shift).tolist(), "hit@1": hits})
        for name, shift, hits in (
            ("a", 0.0, [1] * 30 + [0] * 10),
            ("b", 0.05, [1] * 20 + [0] * 20),
            ("c", -0.02, [1] * 35 + [0] * 5),
        )
    ]
    comparison = compare_reports(runs, baseline=None, resamples=2000)
    assert comparison.all_pairs and comparison.baseline is None
    pairs = [(t.run, t.baseline) for t in comparison.row("bm25.ndcg@10").tests]
    assert pairs == [("b #1", "a #0"), ("c #2", "a #0"), ("c #2", "b #1")]
    tests = [t for row in comparison.rows for t in row.tests]
    assert comparison.comparisons == len(tests) == 6
    assert [t.p_holm for t in tests] == pytest.approx(direct_holm([t.p_value for t in tests]))
    by_name = {r.report_id: r for r in runs}
    for test in comparison.row("bm25.ndcg@10").tests:
        x = [c.score("ndcg@10") for c in by_name[test.baseline[0]].case_results]
        y = [c.score("ndcg@10") for c in by_name[test.run[0]].case_results]
        assert test.difference == pytest.approx(np.mean(np.subtract(y, x)), abs=1e-12)
    assert "Every pair of runs is tested" in "\n".join(pairing_lines(comparison))


def _bm25_and_fusion() -> tuple[EvaluationReport, EvaluationReport, dict[str, list[float]]]:
    rng = np.random.default_rng(5)
    values = {name: rng.random(30).round(4).tolist() for name in ("x", "y", "e", "z")}
    bm25 = modes_report("bm25", {"bm25": {"ndcg@10": values["x"], "recall@100": values["x"]}})
    fusion = modes_report(
        "bm25_fusion",
        {
            "bm25": {"ndcg@10": values["y"], "recall@100": values["y"]},
            "bm25_exact": {"ndcg@10": values["e"], "hit@1": [1] * 30},
            "fusion": {"ndcg@10": values["z"], "recall@100": values["z"]},
        },
    )
    return bm25, fusion, values


def test_runs_of_different_query_modes_pair_under_their_primary_modes() -> None:
    bm25, fusion, values = _bm25_and_fusion()
    assert fusion.primary_query_mode == "fusion"
    comparison = compare_reports([bm25, fusion], resamples=500)
    assert comparison.metrics == ("ndcg@10", "recall@100")
    row = comparison.row("ndcg@10")
    assert row.modes == ("bm25", "fusion")
    test = row.test("bm25_fusion #1")
    assert (test.run_mode, test.baseline_mode) == ("fusion", "bm25")
    diffs = np.subtract(values["z"], values["x"])
    assert test.difference == pytest.approx(diffs.mean(), abs=1e-12)
    assert (test.wins, test.losses) == (int(np.sum(diffs > 0)), int(np.sum(diffs < 0)))
    assert row.mean("bm25_fusion #1").mean == pytest.approx(np.mean(values["z"]))
    assert row.mean("bm25_fusion #1").query_mode == "fusion"
    lines = pairing_lines(comparison)
    assert "bm25 #0: query mode bm25 (its primary mode)" in lines
    assert "bm25_fusion #1: query mode fusion (its primary mode)" in lines

    # A mode every run has, named once; then one mode per run, in the runs' order.
    same = compare_reports([bm25, fusion], metrics=["bm25.ndcg@10"], resamples=500)
    assert same.metrics == ("bm25.ndcg@10",) and same.rows[0].modes == ("bm25", "bm25")
    assert same.rows[0].tests[0].difference == pytest.approx(
        np.mean(np.subtract(values["y"], values["x"])), abs=1e-12
    )
    per_run = compare_reports(
        [bm25, fusion], metrics=["bm25.ndcg@10:bm25_exact.ndcg@10", "ndcg_at_10"], resamples=500
    )
    assert per_run.metrics == ("bm25.ndcg@10:bm25_exact.ndcg@10", "ndcg@10")
    assert per_run.rows[0].modes == ("bm25", "bm25_exact")
    assert per_run.rows[0].tests[0].difference == pytest.approx(
        np.mean(np.subtract(values["e"], values["x"])), abs=1e-12
    )

    with pytest.raises(CompareError) as refused:
        compare_reports([bm25, fusion], metrics=["fusion.ndcg@10"])
    assert str(refused.value) == (
        "run 'bm25 #0' has no fusion.ndcg@10 (its query modes: bm25); name a mode per run, "
        "e.g. --metrics bm25.ndcg@10:fusion.ndcg@10"
    )
    with pytest.raises(CompareError, match=r"names 3 run\(s\) but 2 are compared"):
        compare_reports([bm25, fusion], metrics=["ndcg@10:fusion.ndcg@10:bm25.ndcg@10"])
    with pytest.raises(CompareError, match=r"pairs different metrics \(ndcg@10, recall@100\)"):
        compare_reports([bm25, fusion], metrics=["bm25.ndcg@10:fusion.recall@100"])
    with pytest.raises(CompareError, match=r"run 'bm25 #0' has no metric 'hit@1' \(it has "):
        compare_reports([bm25, fusion], metrics=["hit@1:bm25_exact.hit@1"])
    with pytest.raises(CompareError) as unknown:
        compare_reports([bm25, fusion], metrics=["mrr@10"])
    assert (
        "unknown metric 'mrr@10' (metrics every run has under its primary query mode: "
        "ndcg@10, recall@100;" in str(unknown.value)
    )


def test_cases_of_one_run_only_are_left_out_and_reported() -> None:
    rng = np.random.default_rng(3)
    values = rng.random(20).round(3).tolist()
    a = synthetic_report("a", {"ndcg@10": values[:10]}, [f"c{i:02d}" for i in range(10)])
    b = synthetic_report("b", {"ndcg@10": values[10:]}, [f"c{i:02d}" for i in range(1, 11)])
    comparison = compare_reports([a, b], resamples=500)
    assert comparison.cases == 9
    first, second = comparison.runs
    assert (first.cases, first.left_out, first.left_out_examples) == (10, 1, ("u/c00",))
    assert (second.cases, second.left_out, second.left_out_examples) == (10, 1, ("u/c10",))
    # Means and differences are over the 9 shared cases.
    assert comparison.rows[0].mean("a #0").mean == pytest.approx(np.mean(values[1:10]))
    assert comparison.rows[0].mean("b #1").mean == pytest.approx(np.mean(values[10:19]))
    test = comparison.rows[0].tests[0]
    assert test.paired == 9 and test.difference == pytest.approx(
        np.mean(np.subtract(values[10:19], values[1:10]))
    )
    lines = pairing_lines(comparison)
    assert "Cases are paired on (unit, case): 9 case(s) are in every run." in lines
    assert (
        "a #0: query mode bm25 (its primary mode); 1 of its 10 cases are not in every "
        "run and are left out (e.g. u/c00)" in lines
    )

    half = synthetic_report("h", {"ndcg@10": values[:10]}, [f"c{i:02d}" for i in range(5, 15)])
    assert compare_reports([a, half], resamples=200).cases == 5  # 50%: the default threshold
    with pytest.raises(CompareError) as refused:
        compare_reports([a, half], min_overlap=0.6)
    assert str(refused.value) == (
        "only 5 of the 10 cases of run 'a #0' are in every compared run (50%, below "
        "--min-overlap 0.6); 5 would be left out (e.g. u/c00, u/c01, u/c02) — compare runs of "
        "the same benchmark, split and limit, or lower --min-overlap to compare on the 5 "
        "shared cases"
    )
    apart = synthetic_report("z", {"ndcg@10": values[:3]}, ["x1", "x2", "x3"])
    with pytest.raises(CompareError, match=r"run 'a #0' shares no case with the other runs"):
        compare_reports([a, apart], min_overlap=0)
    with pytest.raises(CompareError, match="need at least two runs to compare, got 1"):
        compare_reports([a])


def test_labels_name_the_overrides_that_differ() -> None:
    assert split_overrides("recipe=bm25 runner.query_modes=[bm25, fusion]  x='a b'") == [
        "recipe=bm25",
        "runner.query_modes=[bm25, fusion]",
        "x='a b'",
    ]
    # Where things go (paths, tracking, hydra) is never what differs.
    assert differing_labels(
        [["recipe=bm25", "paths.root=/a"], ["recipe=bm25_fusion", "paths.root=/b"]], [{}, {}]
    ) == ["recipe=bm25", "recipe=bm25_fusion"]
    # A run without the override shows its config value (a group by its name).
    assert differing_labels(
        [["recipe=bm25_fusion", "recipe.chunk_size=64"], []],
        [
            {"recipe.name": "bm25_fusion", "recipe.chunk_size": "64"},
            {"recipe.name": "bm25", "recipe.chunk_size": "null"},
        ],
    ) == [
        "recipe=bm25_fusion chunk_size=64",
        "recipe=bm25 chunk_size=null",
    ]
    # Same overrides (or none): the result-shaping config values that differ.
    assert differing_labels(
        [[], []],
        [
            {"recipe.indexes.bm25.k1": "1.2", "paths.root": "/a", "recipe.description": "x"},
            {"recipe.indexes.bm25.k1": "0.5", "paths.root": "/b", "recipe.description": "y"},
        ],
    ) == ["k1=1.2", "k1=0.5"]
    # Names first, then at most MAX_CONFIG_KEYS keys.
    configs = [
        {"recipe.indexes.a": v, "recipe.indexes.b": v, "recipe.indexes.c": v, "recipe.name": n}
        for v, n in (("1", "bm25"), ("2", "bm25_fusion"))
    ]
    assert differing_labels([[], []], configs) == [
        "recipe=bm25 a=1 b=1 +1 more",
        "recipe=bm25_fusion a=2 b=2 +1 more",
    ]
    assert differing_labels([["recipe=bm25"], ["recipe=bm25"]], [{}, {}]) is None


def test_cli_errors_are_one_line_and_the_baseline_can_be_chosen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = binary_pair()
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
    assert "--all-pairs tests every pair; it takes no --baseline" in fails(
        str(first), str(tmp_path / "b"), "--all-pairs", "--baseline", "1"
    )
    assert "--min-overlap must be within [0, 1], got 1.5" in fails(
        str(first), str(tmp_path / "b"), "--min-overlap", "1.5"
    )
    assert "baseline 'recipe=bm25' is none of the runs ('a (a)', 'b (b)')" in fails(
        str(first), str(tmp_path / "b"), "--baseline", "recipe=bm25"
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
    assert "a (a) (baseline)" in out and "(McN)" in out  # McNemar, abbreviated to fit 120 columns
    assert f"html: {tmp_path / 'out' / 'comparison.html'}" in out
    assert numbers["baseline"] == "a (a)" and numbers["resamples"] == 500
    for baseline in ("1", str(tmp_path / "b"), "b (b)"):
        _, numbers = succeeds(str(first), str(tmp_path / "b"), "--baseline", baseline)
        assert numbers["baseline"] == "b (b)"
        assert [r["label"] for r in numbers["runs"]] == ["a (a)", "b (b)"]
    _, numbers = succeeds(str(first), str(first), "--metrics", "hit_at_1")
    assert [r["label"] for r in numbers["runs"]] == ["a (a) #1", "a (a) #2"]
    (test,) = numbers["rows"][0]["tests"]
    assert numbers["metrics"] == ["bm25.hit@1"] and test["p_value"] == 1.0
    assert test["difference"] == 0 and test["ties"] == 28 and test["excluded"] == 1
    _, numbers = succeeds(str(first), str(tmp_path / "b"), "--all-pairs")
    assert numbers["all_pairs"] and numbers["baseline"] is None


def test_importing_compare_loads_no_mlflow_scipy_or_matplotlib() -> None:
    heavy = "{'mlflow', 'scipy', 'matplotlib'}"
    code = f"import sys, heta_eval.cli.compare; print(sorted({heavy} & set(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_labels_come_from_the_saved_overrides_and_secrets_stay_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = binary_pair()
    for name, report, overrides in (
        ("a", a, ["recipe=bm25", "+recipe.metadata.api_key=sk-a-secret", "paths.root=/x"]),
        ("b", b, ["recipe=bm25_fusion", "+recipe.metadata.api_key=sk-b-secret", "paths.root=/y"]),
    ):
        report.write_json(tmp_path / name / "report.json")
        (tmp_path / name / ".hydra").mkdir()
        (tmp_path / name / ".hydra" / "overrides.yaml").write_text(
            "".join(f"- {o}\n" for o in overrides)
        )
    runs = load_reports([str(tmp_path / "a"), str(tmp_path / "b")])
    assert [r.label for r in runs] == ["recipe=bm25", "recipe=bm25_fusion"]
    assert runs[0].overrides[1] == "+recipe.metadata.api_key=***"
    with pytest.raises(SystemExit) as exited:
        main([str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "out")])
    assert exited.value.code == 0
    printed = capsys.readouterr().out
    assert "baseline recipe=bm25" in printed
    for text in (printed, *(p.read_text() for p in (tmp_path / "out").iterdir())):
        assert "secret" not in text
