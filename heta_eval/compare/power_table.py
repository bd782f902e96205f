"""The power table of a comparison: for each tested pair and metric, the minimum detectable
effect, the queries needed to detect the observed Δ and whether a non-significant result was
underpowered (numbers from `compare.power`), and the paragraph that says how to read it."""

from __future__ import annotations

from heta_eval.compare.paired import Comparison
from heta_eval.compare.power import DEFAULT_POWER, power_text

POWER_COLUMNS = ("metric", "run", "against", "Δ", "n", "sd of Δ", "MDE", "n needed", "verdict")


def power_rows(comparison: Comparison) -> list[list[str]]:
    """One line per tested pair and metric (columns POWER_COLUMNS)."""
    rows = []
    for row in comparison.rows:
        for test in row.tests:
            if test.p_value is None:
                continue
            other = "baseline" if test.baseline == comparison.baseline else test.baseline
            p = test.power
            sd = "—" if p is None or p.sd is None else f"{p.sd:.4f}"
            mde, needed, verdict = power_text(p, test.difference)
            diff = "—" if test.difference is None else f"{test.difference:+.4f}"
            rows.append(
                [row.metric, test.run, other, diff, str(test.paired), sd, mde, needed, verdict]
            )
    return rows


def power_guide(comparison: Comparison) -> str:
    """How to read the power table."""
    power = next(
        (t.power.power for r in comparison.rows for t in r.tests if t.power is not None),
        DEFAULT_POWER,
    )
    return (
        f"MDE is the minimum detectable effect: the smallest true mean difference the "
        f"comparison detects with {power:.0%} power at alpha = {comparison.alpha:g} (two-sided), "
        "given the number of paired cases n and the standard deviation of their differences "
        "(the paired t-test's power, which the randomization and McNemar tests approach "
        "with many cases). n needed is how many paired cases it would take to detect the "
        f"observed Δ with {power:.0%} power, the spread staying the same. A non-significant "
        "result is underpowered when |Δ| is below the MDE: these cases could not have told a "
        "difference that size from none, so the result says nothing either way; adequately "
        "powered means a difference of the observed size would usually have been detected. "
        f"The MDE is at alpha itself; Holm's correction over {comparison.comparisons} tests asks "
        "for more."
    )
