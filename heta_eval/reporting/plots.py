"""Static PNG plots of a run report (matplotlib's Agg canvas; no display, no pyplot state)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

# One colour per query mode, in the order the report lists them (primary first).
COLORS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3")
HIST_BINS = 20


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _png(fig: Any, left_inches: float = 0.6) -> bytes:
    # Fixed margins, not tight_layout: measuring every tick label to place the axes draws
    # each figure twice, which was most of report.html's drawing time.
    width, height = fig.get_size_inches()
    fig.subplots_adjust(
        left=min(left_inches / width, 0.6),
        right=1 - 0.15 / width,
        bottom=0.5 / height,
        top=1 - 0.35 / height,
    )
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def color(index: int) -> str:
    """The colour of the `index`-th query mode."""
    return COLORS[index % len(COLORS)]


def summary_plot(
    metrics: Sequence[str],
    modes: Sequence[str],
    cells: Mapping[tuple[str, str], tuple[float, float | None, float | None]],
    confidence: float,
) -> bytes:
    """Mean and CI of every metric (rows) for every mode (coloured dots with error bars)."""
    import numpy as np

    fig = _figure(8.0, 1.0 + 0.42 * len(metrics) * max(1, min(len(modes), 3)) ** 0.5)
    ax = fig.add_subplot()
    y = np.arange(len(metrics))
    step = 0.6 / max(len(modes), 1)
    for i, mode in enumerate(modes):
        offsets = y - 0.3 + step * (i + 0.5)
        means, low, high, ys = [], [], [], []
        for row, metric in zip(offsets, metrics, strict=True):
            cell = cells.get((mode, metric))
            if cell is None:
                continue
            mean, ci_low, ci_high = cell
            ys.append(row)
            means.append(mean)
            low.append(0.0 if ci_low is None else max(mean - ci_low, 0.0))
            high.append(0.0 if ci_high is None else max(ci_high - mean, 0.0))
        ax.errorbar(
            means, ys, xerr=[low, high], fmt="o", capsize=3, color=color(i), label=mode, ms=5
        )
    ax.set_yticks(y, list(metrics))
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"mean and {confidence:.0%} bootstrap CI per metric")
    if modes:
        ax.legend(title="query mode", fontsize="small", loc="best")
    # Room for the metric names on the y axis (about 0.075 inch per character at 10 pt).
    return _png(fig, left_inches=0.25 + 0.075 * max((len(m) for m in metrics), default=4))


def histogram(metric: str, values_by_mode: Mapping[str, Sequence[float]]) -> bytes:
    """Distribution of one metric over the cases, one outline per query mode."""
    import numpy as np

    fig = _figure(3.9, 2.6)
    ax = fig.add_subplot()
    everything = [v for values in values_by_mode.values() for v in values]
    low, high = (min(everything), max(everything)) if everything else (0.0, 1.0)
    if low >= 0.0 and high <= 1.0:
        low, high = 0.0, 1.0  # most metrics are rates or scores in [0, 1]
    elif low == high:
        low, high = low - 0.5, high + 0.5
    bins = np.linspace(low, high, HIST_BINS + 1)
    shown = [(i, mode, values) for i, (mode, values) in enumerate(values_by_mode.items()) if values]
    if shown:
        # Side-by-side bars: modes with identical distributions stay visible.
        ax.hist(
            [values for _, _, values in shown],
            bins=bins,
            histtype="bar",
            color=[color(i) for i, _, _ in shown],
            label=[mode for _, mode, _ in shown],
            rwidth=0.9,
        )
    ax.set_title(metric)
    ax.set_xlabel("value per case")
    ax.set_ylabel("cases")
    ax.grid(axis="y", alpha=0.3)
    if len(values_by_mode) > 1:
        ax.legend(fontsize="x-small")
    return _png(fig, left_inches=0.55)


def latency_plot(latencies_by_mode: Mapping[str, Sequence[float]]) -> bytes:
    """Distribution of query latencies per mode (log scale when they span decades): latencies
    measured one query at a time only (a batch mean is not a query's latency)."""
    import numpy as np

    fig = _figure(8.0, 2.9)
    ax = fig.add_subplot()
    everything = [v for values in latencies_by_mode.values() for v in values if v > 0]
    if everything:
        low, high = min(everything), max(everything)
        log_scale = high / low > 20
        if log_scale:
            bins = np.geomspace(low, high * 1.0001, 31)
            ax.set_xscale("log")
        else:
            bins = np.linspace(0.0, high * 1.0001, 31)
        for i, (mode, values) in enumerate(latencies_by_mode.items()):
            positive = [v for v in values if v > 0]
            if positive:
                ax.hist(
                    positive, bins=bins, histtype="step", linewidth=1.6, color=color(i), label=mode
                )
        ax.legend(fontsize="x-small", title="query mode")
    ax.set_title("query latency per case (each query alone)")
    ax.set_xlabel("seconds")
    ax.set_ylabel("cases")
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)
