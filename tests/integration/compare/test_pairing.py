"""How runs are paired: runs of different query modes under their primary modes (or a mode
named per run), and cases of one run only left out and reported."""

from __future__ import annotations

import numpy as np
import pytest

from heta_eval import EvaluationReport
from heta_eval.compare import (
    CompareError,
    compare_reports,
)
from heta_eval.compare.render import pairing_lines

from ...compare_helpers import modes_report, synthetic_report


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
