"""A comparison as a rich table, Markdown, self-contained HTML (with plots) and JSON."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from heta_eval.compare.paired import MCNEMAR, RANDOMIZATION, Comparison, MetricRow, RunCell

OUTPUT_FILES = {"markdown": "comparison.md", "html": "comparison.html", "json": "comparison.json"}
_TEST_SHORT = {MCNEMAR: "McNemar", RANDOMIZATION: "randomization"}


def _num(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.1e}" if value < 1e-4 else f"{value:.4f}"


def cell_lines(cell: RunCell, baseline: bool) -> list[str]:
    """The text of one table cell, line by line (shared by every format)."""
    lines = [_num(cell.mean)]
    if cell.ci_low is not None and cell.ci_high is not None:
        lines[0] += f" [{cell.ci_low:.3f}, {cell.ci_high:.3f}]"
    if baseline:
        lines.append(f"baseline · n={cell.scored}")
        return lines
    if cell.p_value is None:
        lines.append(f"no paired cases ({cell.excluded} excluded)")
        return lines
    mark = " *" if cell.significant else ""
    sign = "+" if (cell.difference or 0) > 0 else ""
    lines.append(f"Δ {sign}{_num(cell.difference)}{mark}")
    test = _TEST_SHORT.get(cell.test or "", cell.test)
    lines.append(f"p {_p(cell.p_value)} · Holm {_p(cell.p_holm)} ({test})")
    excluded = f" · {cell.excluded} excluded" if cell.excluded else ""
    lines.append(f"W/L/T {cell.wins}/{cell.losses}/{cell.ties} · n={cell.paired}{excluded}")
    return lines


def _header(comparison: Comparison, label: str) -> str:
    return f"{label} (baseline)" if label == comparison.baseline else label


def _cells(comparison: Comparison, row: MetricRow) -> list[list[str]]:
    return [cell_lines(c, c.run == comparison.baseline) for c in row.cells]


def how_to_read(comparison: Comparison) -> str:
    """The explanation printed under every table."""
    level = f"{comparison.confidence:.0%}"
    return (
        f"Each cell gives the run's mean with its {level} bootstrap confidence interval over "
        "all the cases it scored. Other runs are compared with the baseline case by case: "
        "results are paired by (unit_id, case_id, query_mode), and for each metric only the "
        "cases where both runs have a numeric value count (skipped, undetermined or failed "
        "on either side are excluded, and counted). Δ is the mean of the paired differences "
        "(run - baseline); W/L/T counts the cases where the run scores higher, lower or "
        "exactly the same. Metrics whose values are all 0 or 1 use McNemar's exact test "
        "(a two-sided binomial test on the discordant pairs); other metrics use a two-sided "
        f"paired randomization test with {comparison.resamples:,} seeded random sign flips "
        f"of the differences (seed {comparison.seed}). Holm's adjusted p-value corrects for "
        f"all {comparison.comparisons} comparisons of the table; * marks Holm p < "
        f"{comparison.alpha:g}."
    )


def rich_table(comparison: Comparison) -> Table:
    """The comparison as a rich table: metrics as rows, runs as columns."""
    table = Table(
        title=f"{len(comparison.runs)} runs · {comparison.cases} cases · "
        f"baseline {escape(comparison.baseline)}",
        title_justify="left",
        show_lines=True,
    )
    table.add_column("metric")
    for run in comparison.runs:
        table.add_column(escape(_header(comparison, run.label)), justify="right")
    for row in comparison.rows:
        cells = (escape("\n".join(lines)) for lines in _cells(comparison, row))
        table.add_row(escape(row.metric), *cells)
    return table


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _sources(comparison: Comparison) -> list[tuple[str, str]]:
    rows = []
    for run in comparison.runs:
        where = f"MLflow run {run.run_id}" if run.run_id else run.source
        if run.sweep_run_id:
            where += f" (sweep {run.sweep_run_id})"
        rows.append((run.label, f"{run.benchmark} · recipe {run.recipe} · {where}"))
    return rows


def to_markdown(comparison: Comparison) -> str:
    """A Markdown table plus the runs and a short guide to reading it."""
    header = ["metric", *(_header(comparison, r.label) for r in comparison.runs)]
    lines = [
        f"# Comparison of {len(comparison.runs)} runs",
        "",
        f"Baseline: **{_md(comparison.baseline)}** · {comparison.cases} paired case results.",
        "",
        "| " + " | ".join(_md(h) for h in header) + " |",
        "| --- |" + " ---: |" * len(comparison.runs),
    ]
    for row in comparison.rows:
        cells = ["<br>".join(_md(x) for x in c) for c in _cells(comparison, row)]
        lines.append(f"| {_md(row.metric)} | " + " | ".join(cells) + " |")
    lines += ["", "## Runs", ""]
    lines += [f"- **{_md(label)}**: {_md(text)}" for label, text in _sources(comparison)]
    lines += ["", "## How to read this", "", how_to_read(comparison), ""]
    return "\n".join(lines)


def metric_plot(comparison: Comparison, row: MetricRow) -> bytes:
    """PNG of the metric's mean per run with its CI as error bars (matplotlib, Agg)."""
    import textwrap

    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels = [textwrap.fill(c.run, 40) for c in row.cells]
    means = np.array([np.nan if c.mean is None else c.mean for c in row.cells])
    low = [0.0 if c.ci_low is None or c.mean is None else c.mean - c.ci_low for c in row.cells]
    high = [0.0 if c.ci_high is None or c.mean is None else c.ci_high - c.mean for c in row.cells]
    colors = ["#4c72b0" if c.run == comparison.baseline else "#dd8452" for c in row.cells]
    # Horizontal bars keep long run labels readable; the first run is at the top.
    fig = Figure(figsize=(7.5, 1.2 + 0.55 * len(labels)), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    y = np.arange(len(labels))
    ax.barh(y, np.nan_to_num(means), xerr=[low, high], capsize=4, color=colors, height=0.6)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_title(f"{row.metric}: mean and {comparison.confidence:.0%} CI (blue: baseline)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.4em 0.7em; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
.plots img { margin: 0.5em 1em 0.5em 0; border: 1px solid #eee; }
p.read { max-width: 60em; }
"""


def to_html(comparison: Comparison) -> str:
    """A self-contained page: the table, the runs, the guide, one embedded plot per metric."""
    esc = html.escape
    head = "".join(f"<th>{esc(_header(comparison, r.label))}</th>" for r in comparison.runs)
    body = []
    for row in comparison.rows:
        cells = "".join(
            '<td class="num">' + "<br>".join(esc(x) for x in lines) + "</td>"
            for lines in _cells(comparison, row)
        )
        body.append(f"<tr><td>{esc(row.metric)}</td>{cells}</tr>")
    runs = "".join(
        f"<li><b>{esc(label)}</b>: {esc(text)}</li>" for label, text in _sources(comparison)
    )
    plots = "".join(
        f'<img alt="{esc(row.metric)}" src="data:image/png;base64,'
        f'{base64.b64encode(metric_plot(comparison, row)).decode("ascii")}">'
        for row in comparison.rows
    )
    title = f"Comparison of {len(comparison.runs)} runs"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>\n"
        f"<h1>{esc(title)}</h1>\n<p>Baseline: <b>{esc(comparison.baseline)}</b> · "
        f"{comparison.cases} paired case results.</p>\n"
        f'<table id="comparison"><thead><tr><th>metric</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>\n"
        f"<h2>Runs</h2><ul>{runs}</ul>\n"
        f'<h2>How to read this</h2><p class="read">{esc(how_to_read(comparison))}</p>\n'
        f'<h2>Plots</h2><div class="plots">{plots}</div>\n</body></html>\n'
    )


def write_outputs(comparison: Comparison, out_dir: str | Path) -> dict[str, Path]:
    """Write comparison.md, comparison.html and comparison.json into `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    texts = {
        "markdown": to_markdown(comparison),
        "html": to_html(comparison),
        "json": json.dumps(comparison.model_dump(mode="json"), indent=2) + "\n",
    }
    paths = {}
    for kind, text in texts.items():
        path = out / OUTPUT_FILES[kind]
        path.write_text(text, encoding="utf-8")
        paths[kind] = path
    return paths
