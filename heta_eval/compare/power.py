"""What a paired comparison could have detected: power from the paired differences.

For `n` paired differences with standard deviation `s`, the two-sided paired t-test at level
`alpha` rejects with probability (its power)

    P(|T| > t(1 - alpha/2, n - 1)),   T ~ noncentral t(df = n - 1, nc = delta * sqrt(n) / s)

for a true mean difference `delta` (scipy's `nct`, as G*Power's "means: difference from
constant (matched pairs)" and statsmodels' `TTestPower` compute it). From it:

- the minimum detectable effect (MDE): the smallest |delta| detected with the target power
  (80% by default) at this `n`;
- the queries needed: the smallest `n` whose power reaches the target for the observed Δ
  (with the same `s`);
- a non-significant result is *underpowered* when the observed |Δ| is below the MDE: the
  comparison could not have told a difference that size from none.

Our tests are a paired randomization (sign-flip) test and McNemar's exact test; the t-test's
power is their large-sample power (the randomization test on the mean converges to the
t-test), which `tests/unit/compare/test_power.py` checks by simulation against the
randomization test.
The macro average of a suite uses the normal approximation on its standard error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

DEFAULT_POWER = 0.8
MAX_QUERIES = 10_000_000  # "needed" beyond this is reported as more than it


class Power(BaseModel):
    """The power of one paired comparison: the minimum detectable effect at `power` and
    `alpha` for `paired` differences of standard deviation `sd`, the number of pairs needed
    to detect the observed `difference`, and whether a non-significant result was
    underpowered (None when significant or when nothing can be said)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    power: float
    alpha: float
    paired: int
    sd: float | None
    mde: float | None
    needed: int | None
    needed_more_than: bool = False
    underpowered: bool | None = None


def t_power(effect: float, n: int, alpha: float) -> float:
    """Power of the two-sided one-sample (paired) t-test with `n` pairs for a standardised
    effect `effect` = delta / s (Cohen's d_z)."""
    if n < 2:
        return 0.0
    from scipy.stats import nct, t

    df = n - 1
    crit = float(t.ppf(1 - alpha / 2, df))
    nc = abs(effect) * math.sqrt(n)
    upper = float(nct.sf(crit, df, nc))
    if not math.isfinite(upper):  # scipy's nct loses the tail far out; use its complement
        upper = 1.0 - float(nct.cdf(crit, df, nc))
    lower = float(nct.sf(crit, df, -nc))  # P(T < -crit) by symmetry
    return min(1.0, upper + (lower if math.isfinite(lower) else 0.0))


def detectable_effect(n: int, alpha: float, power: float = DEFAULT_POWER) -> float | None:
    """The smallest standardised effect (d_z) the paired t-test detects with `power` at
    level `alpha` with `n` pairs; None below two pairs."""
    if n < 2:
        return None
    from scipy.optimize import brentq

    high = 1.0
    while t_power(high, n, alpha) < power:
        high *= 2
    return float(brentq(lambda d: t_power(d, n, alpha) - power, 0.0, high, xtol=1e-10))


def pairs_needed(effect: float, alpha: float, power: float = DEFAULT_POWER) -> int | None:
    """The smallest number of pairs for which the paired t-test detects the standardised
    effect `effect` with `power` at level `alpha`; None for a zero effect (never) and above
    MAX_QUERIES."""
    if effect == 0 or not math.isfinite(effect):
        return None
    # The normal approximation is a lower bound for the t-test's n: search up from it.
    from scipy.stats import norm

    guess = ((norm.ppf(1 - alpha / 2) + norm.ppf(power)) / abs(effect)) ** 2
    low = max(2, math.floor(guess))
    if low > MAX_QUERIES:
        return None
    high = low
    while t_power(effect, high, alpha) < power:
        high *= 2
        if high > MAX_QUERIES:
            return None
    while low < high:  # power grows with n: the first n that reaches it
        mid = (low + high) // 2
        if t_power(effect, mid, alpha) >= power:
            high = mid
        else:
            low = mid + 1
    return low


def paired_power(
    differences: Sequence[float],
    alpha: float,
    significant: bool | None,
    power: float = DEFAULT_POWER,
) -> Power:
    """The power of a paired comparison from its per-case differences (run - baseline)."""
    d = np.asarray(differences, dtype=float)
    n = int(d.size)
    sd = float(np.std(d, ddof=1)) if n >= 2 else None
    if sd is None or sd == 0:
        # Identical differences: no spread to estimate power from.
        return Power(power=power, alpha=alpha, paired=n, sd=sd, mde=None, needed=None)
    mde = detectable_effect(n, alpha, power)
    delta = float(d.mean())
    needed = pairs_needed(delta / sd, alpha, power)
    return Power(
        power=power,
        alpha=alpha,
        paired=n,
        sd=sd,
        mde=None if mde is None else mde * sd,
        needed=needed,
        needed_more_than=needed is None and delta != 0,
        underpowered=None if significant or significant is None else abs(delta) < mde * sd,
    )


def normal_power(
    difference: float,
    standard_error: float,
    total: int,
    alpha: float,
    significant: bool | None,
    power: float = DEFAULT_POWER,
) -> Power:
    """Power of a difference with a known standard error over `total` cases (the macro
    average of a suite): MDE = (z(1 - alpha/2) + z(power)) * SE; the cases needed scale the
    total by (SE / (|Δ| / (z + z)))^2, every member growing in proportion."""
    from scipy.stats import norm

    if standard_error <= 0 or not math.isfinite(standard_error):
        return Power(power=power, alpha=alpha, paired=total, sd=None, mde=None, needed=None)
    z = float(norm.ppf(1 - alpha / 2) + norm.ppf(power))
    mde = z * standard_error
    needed = None
    if difference != 0:
        needed = math.ceil(total * (mde / abs(difference)) ** 2)
    return Power(
        power=power,
        alpha=alpha,
        paired=total,
        sd=standard_error * math.sqrt(total),
        mde=mde,
        needed=needed,
        underpowered=None if significant or significant is None else abs(difference) < mde,
    )


def power_text(p: Power | None, difference: float | None) -> tuple[str, str, str]:
    """Cells of the power table: MDE, queries needed for the observed Δ, and the verdict."""
    if p is None or p.mde is None:
        return "—", "—", "no spread in the differences" if p and p.paired >= 2 else "—"
    if p.needed is not None:
        needed = f"{p.needed:,}"
    elif p.needed_more_than:
        needed = f"> {MAX_QUERIES:,}"
    else:
        needed = "— (Δ = 0)"
    if p.underpowered is None:
        verdict = "significant" if difference is not None else "—"
    elif p.underpowered:
        verdict = "underpowered: |Δ| < MDE"
    else:
        verdict = "adequately powered: |Δ| ≥ MDE"
    return f"{p.mde:.4f}", needed, verdict
