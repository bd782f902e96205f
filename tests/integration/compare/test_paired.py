"""Paired tests on reports with known answers: McNemar on binary scores, the randomization
test against the exact permutation distribution, Holm over every comparison, all pairs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binomtest

from heta_eval.compare import (
    MCNEMAR,
    RANDOMIZATION,
    compare_reports,
    randomization_test,
)
from heta_eval.compare.render import pairing_lines
from heta_eval.evaluators.statistics import bootstrap_ci

from ...compare_helpers import binary_pair, direct_holm, synthetic_report


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
