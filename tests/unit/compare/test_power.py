"""Power of paired comparisons: textbook numbers, a simulation against our own randomization
test, and the power table in every output of a comparison."""

from __future__ import annotations

import math

import numpy as np
import pytest

from heta_eval.compare import compare_reports, randomization_test, to_html, to_markdown
from heta_eval.compare.power import (
    detectable_effect,
    normal_power,
    paired_power,
    pairs_needed,
    t_power,
)
from tests.compare_helpers import synthetic_report


def test_textbook_paired_t_test_sample_sizes() -> None:
    # G*Power 3 ("means: difference from constant, matched pairs", two tails, alpha 0.05,
    # power 0.80), as in Faul et al. (2007) and Cohen's (1988) tables: d_z 0.5 needs 34
    # pairs (actual power 0.8078), d_z 0.3 needs 90, d_z 0.2 needs 199.
    assert pairs_needed(0.5, 0.05) == 34
    assert t_power(0.5, 34, 0.05) == pytest.approx(0.8078, abs=1e-4)
    assert t_power(0.5, 33, 0.05) < 0.8
    assert pairs_needed(0.3, 0.05) == 90
    assert pairs_needed(0.2, 0.05) == 199
    # The MDE inverts it: with 34 pairs, 80% power is reached just below d_z 0.5.
    assert detectable_effect(34, 0.05) == pytest.approx(0.495, abs=1e-3)
    assert t_power(detectable_effect(34, 0.05), 34, 0.05) == pytest.approx(0.8, abs=1e-6)


def test_normal_approximation_by_hand() -> None:
    # (z_.975 + z_.80) * SE = (1.959964 + 0.841621) * 0.01 = 0.028016
    p = normal_power(0.01, 0.01, total=400, alpha=0.05, significant=False)
    assert p.mde == pytest.approx(0.028016, abs=1e-6)
    # n scales with (MDE / Δ)^2: 400 * 2.8016^2 = 3139.6 -> 3140
    assert p.needed == math.ceil(400 * (0.0280158 / 0.01) ** 2)
    assert p.underpowered is True


def test_power_from_differences_scales_with_their_spread() -> None:
    rng = np.random.default_rng(0)
    d = rng.normal(0.0, 1.0, 300)
    d = (d - d.mean()) / d.std(ddof=1) * 0.2 + 0.01  # sd exactly 0.2, mean exactly 0.01
    p = paired_power(d, 0.05, significant=False)
    assert p.sd == pytest.approx(0.2)
    assert p.mde == pytest.approx(detectable_effect(300, 0.05) * 0.2)
    assert p.needed == pairs_needed(0.05, 0.05)  # Δ / sd = 0.05
    assert p.underpowered is True
    assert paired_power(d, 0.05, significant=True).underpowered is None
    flat = paired_power([0.1] * 5, 0.05, significant=False)
    assert flat.mde is None and flat.underpowered is None


def test_a_true_difference_of_one_mde_is_detected_about_80_percent_of_the_time() -> None:
    # Simulation with our own test: 400 samples of 40 paired differences whose true mean is
    # the MDE; the randomization test should reject in ~80% of them (binomial sd 2%), and in
    # ~5% when the true mean is 0.
    n, sd, trials = 40, 0.3, 400
    mde = detectable_effect(n, 0.05) * sd
    rng = np.random.default_rng(2026)
    rejected = sum(
        randomization_test(rng.normal(mde, sd, n), resamples=999, seed=i) < 0.05
        for i in range(trials)
    )
    assert 0.73 <= rejected / trials <= 0.87
    null = sum(
        randomization_test(rng.normal(0.0, sd, n), resamples=999, seed=i) < 0.05
        for i in range(trials)
    )
    assert null / trials <= 0.09
    # And the queries needed for half the MDE are about four times as many.
    assert pairs_needed(mde / 2 / sd, 0.05) == pytest.approx(4 * n, rel=0.08)


def test_every_output_of_a_comparison_reports_power() -> None:
    rng = np.random.default_rng(3)
    base = rng.random(60).round(3)
    other = np.clip(base + rng.normal(0.005, 0.1, 60), 0, 1).round(3)
    comparison = compare_reports(
        [
            synthetic_report("a", {"ndcg@10": base.tolist()}),
            synthetic_report("b", {"ndcg@10": other.tolist()}),
        ],
        resamples=2000,
    )
    test = comparison.rows[0].tests[0]
    assert test.power is not None and not test.significant
    diffs = other - base
    assert test.power.sd == pytest.approx(float(np.std(diffs, ddof=1)))
    assert test.power.mde == pytest.approx(detectable_effect(60, 0.05) * test.power.sd)
    assert test.power.underpowered == (abs(test.difference) < test.power.mde)
    md = to_markdown(comparison)
    assert "## Power" in md and f"{test.power.mde:.4f}" in md and "underpowered" in md
    page = to_html(comparison)
    assert 'id="power"' in page and f"{test.power.mde:.4f}" in page
    assert comparison.model_dump(mode="json")["rows"][0]["tests"][0]["power"]["mde"] > 0
