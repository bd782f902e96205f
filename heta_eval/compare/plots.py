"""One PNG per compared metric (matplotlib, Agg): the paired differences with their CIs as
dots around 0, and each run's mean with its CI on an axis zoomed to the data."""

from __future__ import annotations

import io
import textwrap
from typing import Any

from heta_eval.compare.paired import Comparison, MetricRow, PairTest

LABEL_WIDTH = 34  # characters per line of a run label on the y axis
BASELINE_COLOR = "#4c72b0"
RUN_COLOR = "#dd8452"
SIGNIFICANT_COLOR = "#c44e52"
NEUTRAL_COLOR = "#555555"


def _wrap(text: str) -> str:
    return textwrap.fill(text, LABEL_WIDTH, break_long_words=True, break_on_hyphens=False)


def pair_label(comparison: Comparison, test: PairTest) -> str:
    """How a tested pair is named: `run [mode]`, or `run [mode] - other [mode]` when every
    pair is tested."""
    run = f"{test.run} [{test.run_mode}]"
    if comparison.baseline == test.baseline:
        return run
    return f"{run} - {test.baseline} [{test.baseline_mode}]"


def _dots(ax: Any, mids: Any, lows: Any, highs: Any, colors: list[str]) -> None:
    """A dot per row at `mids` with a whisker from `lows` to `highs`, top to bottom."""
    for y, (mid, low, high, color) in enumerate(zip(mids, lows, highs, colors, strict=True)):
        ax.errorbar([mid], [y], xerr=[[mid - low], [high - mid]], fmt="o", color=color, capsize=4)


def _rows(ax: Any, count: int) -> None:
    """Rows top to bottom, half a row of space around them."""
    ax.set_ylim(count - 0.5, -0.5)


def _zoomed(ax: Any, lows: list[float], highs: list[float]) -> None:
    """An x axis just wider than the intervals (a point, e.g. every difference 0, gets a
    window of +-0.01 so that the axis stays readable)."""
    low, high = min(lows), max(highs)
    pad = (high - low) * 0.08 if high > low else max(abs(high) * 0.05, 0.01)
    ax.set_xlim(low - pad, high + pad)


def metric_plot(comparison: Comparison, row: MetricRow) -> bytes:
    """The metric's figure (see metric_figure) as a PNG."""
    buffer = io.BytesIO()
    metric_figure(comparison, row).savefig(buffer, format="png")
    return buffer.getvalue()


def metric_figure(comparison: Comparison, row: MetricRow) -> Any:
    """A matplotlib Figure with two panels: the paired differences (run - baseline) with
    their CIs, a dot per tested pair around a line at 0 (red: Holm-significant); and each
    run's mean with its CI (blue: the baseline), the axis zoomed to the intervals, not
    starting at 0."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    level = f"{comparison.confidence:.0%}"
    tests = [t for t in row.tests if t.difference is not None]
    means = [m for m in row.means if m.mean is not None]
    pair_lines = sum(_wrap(pair_label(comparison, t)).count("\n") + 1 for t in tests)
    mean_lines = sum(_wrap(m.run).count("\n") + 1 for m in means)
    heights = [max(1.0, 0.28 * pair_lines + 0.2), max(1.0, 0.28 * mean_lines + 0.2)]
    fig = Figure(figsize=(9.0, 1.7 + sum(heights)), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    fig.suptitle(row.metric, fontsize=13, fontweight="bold")
    diff_ax, mean_ax = fig.subplots(2, 1, height_ratios=heights)

    if tests:
        y = np.arange(len(tests))
        diffs = np.array([t.difference for t in tests])
        low = np.array([t.ci_low if t.ci_low is not None else t.difference for t in tests])
        high = np.array([t.ci_high if t.ci_high is not None else t.difference for t in tests])
        colors = [SIGNIFICANT_COLOR if t.significant else NEUTRAL_COLOR for t in tests]
        diff_ax.axvline(0.0, color="#999999", linewidth=1, zorder=0)
        _dots(diff_ax, diffs, low, high, colors)
        diff_ax.set_yticks(y, [_wrap(pair_label(comparison, t)) for t in tests])
        _zoomed(diff_ax, [*low.tolist(), 0.0], [*high.tolist(), 0.0])
    else:
        diff_ax.text(0.5, 0.5, "no paired cases", ha="center", va="center")
        diff_ax.set_yticks([])
    against = (
        f"run - {comparison.baseline}" if comparison.baseline else "first - second of each pair"
    )
    diff_ax.set_title(
        f"paired difference ({against}) with {level} CI · red: Holm p < {comparison.alpha:g}",
        fontsize=10,
        loc="left",
        wrap=True,
    )
    _rows(diff_ax, max(1, len(tests)))
    diff_ax.grid(axis="x", alpha=0.3)

    if means:
        y = np.arange(len(means))
        mids = np.array([m.mean for m in means])
        low = np.array([m.ci_low if m.ci_low is not None else m.mean for m in means])
        high = np.array([m.ci_high if m.ci_high is not None else m.mean for m in means])
        colors = [BASELINE_COLOR if m.run == comparison.baseline else RUN_COLOR for m in means]
        _dots(mean_ax, mids, low, high, colors)
        mean_ax.set_yticks(y, [_wrap(f"{m.run} [{m.query_mode}]") for m in means])
        _zoomed(mean_ax, low.tolist(), high.tolist())
    mean_ax.set_title(
        f"mean per run [query mode] with {level} CI · axis zoomed to the intervals"
        + (" · blue: baseline" if comparison.baseline else ""),
        fontsize=10,
        loc="left",
        wrap=True,
    )
    _rows(mean_ax, max(1, len(means)))
    mean_ax.grid(axis="x", alpha=0.3)
    return fig
