"""A comparison as rich tables, Markdown, self-contained HTML (with plots) and JSON.

Every format holds the same three tables: what was paired with what, each run's mean per
metric, and one line per tested pair and metric. Their widths do not grow with the number of
runs except for the means table, which has a column per metric."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from heta_eval.compare.paired import MCNEMAR, RANDOMIZATION, Comparison, PairTest, RunMean
from heta_eval.compare.plots import metric_plot
from heta_eval.compare.power_table import POWER_COLUMNS, power_guide, power_rows

OUTPUT_FILES = {"markdown": "comparison.md", "html": "comparison.html", "json": "comparison.json"}
_TEST_SHORT = {MCNEMAR: "McNemar", RANDOMIZATION: "randomization"}
TEST_COLUMNS = ("metric", "run", "against", "Δ", "CI of Δ", "p (test)", "Holm p", "W/L/T", "n")


def _num(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.1e}" if value < 1e-4 else f"{value:.4f}"


def _interval(low: float | None, high: float | None, signed: bool = False) -> str:
    if low is None or high is None:
        return "—"
    spec = "+.3f" if signed else ".3f"
    return f"[{low:{spec}}, {high:{spec}}]"


def mean_text(mean: RunMean) -> str:
    """A run's mean with its CI, e.g. `0.6612 [0.618, 0.703]`."""
    if mean.mean is None:
        return "— (no values)"
    return f"{_num(mean.mean)} {_interval(mean.ci_low, mean.ci_high)}"


def test_cells(comparison: Comparison, metric: str, test: PairTest) -> list[str]:
    """One line of the tests table (columns TEST_COLUMNS); `against` is "baseline" when
    every run is tested against the one baseline."""
    run = f"{test.run} [{test.run_mode}]"
    other = "baseline" if test.baseline == comparison.baseline else test.baseline
    against = f"{other} [{test.baseline_mode}]"
    excluded = f" ({test.excluded} excluded)" if test.excluded else ""
    if test.p_value is None:
        return [metric, run, against, "—", "—", "no paired cases", "—", "—", f"0{excluded}"]
    sign = "+" if (test.difference or 0) > 0 else ""
    mark = " *" if test.significant else ""
    short = _TEST_SHORT.get(test.test or "", test.test or "")
    return [
        metric,
        run,
        against,
        f"{sign}{_num(test.difference)}{mark}",
        _interval(test.ci_low, test.ci_high, signed=True),
        f"{_p(test.p_value)} ({short})",
        _p(test.p_holm),
        f"{test.wins}/{test.losses}/{test.ties}",
        f"{test.paired}{excluded}",
    ]


_TERMINAL_TEST = {MCNEMAR: "McN", RANDOMIZATION: "rand"}


def _terminal_cells(metric: str, test: PairTest, cells: list[str]) -> list[str]:
    """The tests row for a 120-column terminal: a query mode the metric already names
    (`bm25.ndcg@10`, both runs under bm25) is not repeated, and the test is abbreviated
    (McN: McNemar, rand: randomization; the files say it in full)."""
    mode = metric.split(".", 1)[0] if "." in metric else None
    if mode is not None and test.run_mode == mode and test.baseline_mode == mode:
        cells[1] = cells[1].removesuffix(f" [{mode}]")
        cells[2] = cells[2].removesuffix(f" [{mode}]")
    full = _TEST_SHORT.get(test.test or "")
    if full and cells[5].endswith(f"({full})"):
        cells[5] = cells[5].replace(f"({full})", f"({_TERMINAL_TEST[test.test or '']})")
    return cells


def _test_rows(comparison: Comparison) -> list[list[str]]:
    return [
        test_cells(comparison, row.metric, test) for row in comparison.rows for test in row.tests
    ]


def _run_modes(comparison: Comparison) -> list[str]:
    return [
        ", ".join(dict.fromkeys(row.modes[i] for row in comparison.rows))
        for i in range(len(comparison.runs))
    ]


def _mean_rows(comparison: Comparison) -> list[list[str]]:
    modes = _run_modes(comparison)
    rows = []
    for i, run in enumerate(comparison.runs):
        name = f"{run.label} (baseline)" if run.label == comparison.baseline else run.label
        cells = [mean_text(row.mean(run.label)) for row in comparison.rows]
        rows.append([name, modes[i], *cells])
    return rows


DIFFERENT_DATA = (
    "WARNING: the runs were evaluated on different data (--allow-different-data): their "
    "documents or cases differ, so a difference may be the data's, not the recipe's."
)


def pairing_lines(comparison: Comparison) -> list[str]:
    """What was paired with what: the cases, each run's query modes, what was left out."""
    lines = [f"Cases are paired on (unit, case): {comparison.cases} case(s) are in every run."]
    if comparison.different_data:
        lines.insert(0, DIFFERENT_DATA)
    for run, modes in zip(comparison.runs, _run_modes(comparison), strict=True):
        primary = " (its primary mode)" if modes == run.primary_query_mode else ""
        text = f"{run.label}: query mode {modes}{primary}"
        if run.left_out:
            examples = ", ".join(run.left_out_examples)
            text += (
                f"; {run.left_out} of its {run.cases} cases are not in every run and are "
                f"left out (e.g. {examples})"
            )
        lines.append(text)
    if comparison.all_pairs:
        lines.append("Every pair of runs is tested (Δ = first - second of the pair).")
    else:
        lines.append(f"Every run is tested against the baseline, {comparison.baseline}.")
    lines.append(
        f"CIs: {comparison.resamples:,} bootstrap resamples (seed {comparison.seed}) over the "
        "paired cases; a run's own summary resamples all its cases runner.bootstrap_resamples "
        "times, so its CI may differ in the last digit (--resamples/--seed choose)."
    )
    return lines


def how_to_read(comparison: Comparison) -> str:
    """The explanation printed under every table."""
    level = f"{comparison.confidence:.0%}"
    against = "the second run of the pair" if comparison.all_pairs else "the baseline"
    return (
        f"Means are over the cases every run has, with {level} bootstrap confidence intervals. "
        f"Each test pairs a run with {against} case by case, each run read under the query "
        "mode shown in brackets; for each metric only the cases where both have a numeric "
        "value count (skipped, undetermined or failed on either side are excluded, and "
        "counted). Δ is the mean of the paired differences (run - against) with its "
        f"{level} bootstrap CI; W/L/T counts the cases where the run scores higher, lower or "
        "exactly the same. Metrics whose values are all 0 or 1 use McNemar's exact test "
        "(a two-sided binomial test on the discordant pairs); other metrics use a two-sided "
        f"paired randomization test with {comparison.resamples:,} seeded random sign flips "
        f"of the differences (seed {comparison.seed}). Holm's adjusted p-value corrects for "
        f"all {comparison.comparisons} tests of the comparison (pairs x metrics); * marks "
        f"Holm p < {comparison.alpha:g}."
    )


def _title(comparison: Comparison) -> str:
    against = "all pairs" if comparison.all_pairs else f"baseline {comparison.baseline}"
    return f"{len(comparison.runs)} runs · {comparison.cases} paired cases · {against}"


def rich_table(comparison: Comparison) -> Group:
    """The comparison for the terminal: the pairing, then the means and the tests, one line
    per run (or pair) and metric, so that the width does not grow with the runs or metrics."""
    level = f"{comparison.confidence:.0%}"
    means = Table(title=_title(comparison), title_justify="left")
    for name in ("metric", "run", "query mode", "mean", f"{level} CI", "n"):
        means.add_column(name, justify="right" if name in ("mean", "n") else "left")
    for row in comparison.rows:
        for i, mean in enumerate(row.means):
            baseline = " (baseline)" if mean.run == comparison.baseline else ""
            means.add_row(
                escape(row.metric),
                escape(mean.run + baseline),
                escape(mean.query_mode),
                _num(mean.mean),
                _interval(mean.ci_low, mean.ci_high),
                str(mean.scored),
                end_section=i == len(row.means) - 1,
            )
    rows = [
        _terminal_cells(row.metric, test, test_cells(comparison, row.metric, test))
        for row in comparison.rows
        for test in row.tests
    ]
    columns = list(TEST_COLUMNS)
    title = "paired tests (run - against)"
    if rows and all(cells[2] == "baseline" for cells in rows):
        # Every run against the one baseline: the title says so, no column repeats it.
        title = f"paired tests (run - baseline {comparison.baseline})"
        columns.remove("against")
        rows = [cells[:2] + cells[3:] for cells in rows]
    tests = Table(title=title, title_justify="left")
    for name in columns:
        left = name in ("metric", "run", "against")
        tests.add_column(name, justify="left" if left else "right", overflow="fold")
    for cells in rows:
        tests.add_row(*(escape(c) for c in cells))
    power_columns, power_cells = list(POWER_COLUMNS), power_rows(comparison)
    if power_cells and all(cells[2] == "baseline" for cells in power_cells):
        power_columns.remove("against")  # as in the tests table: the title says against what
        power_cells = [cells[:2] + cells[3:] for cells in power_cells]
    power = Table(title="power (80% unless set otherwise)", title_justify="left")
    for name in power_columns:
        left = name in ("metric", "run", "against", "verdict")
        power.add_column(name, justify="left" if left else "right", overflow="fold")
    for cells in power_cells:
        power.add_row(*(escape(c) for c in cells))
    pairing = Text("\n".join(pairing_lines(comparison)))
    return Group(pairing, means, tests, power)


def _md(text: str) -> str:
    """Text for Markdown: HTML escaped as the page escapes it (ids and names are data,
    never markup a viewer would run), no inline link (`[x](javascript:...)` keeps its text,
    `](` escaped), table bars escaped, one line."""
    escaped = html.escape(text, quote=False).replace("|", "\\|").replace("](", "]\\(")
    return escaped.replace("\r", " ").replace("\n", " ")


def _md_table(header: list[str], rows: list[list[str]], numeric_from: int) -> list[str]:
    align = ["---" if i < numeric_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(_md(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return lines


def _sources(comparison: Comparison) -> list[tuple[str, str]]:
    rows = []
    for run in comparison.runs:
        where = f"MLflow run {run.run_id}" if run.run_id else run.source
        if run.sweep_run_id:
            where += f" (sweep {run.sweep_run_id})"
        overrides = f" · overrides: {' '.join(run.overrides)}" if run.overrides else ""
        rows.append((run.label, f"{run.benchmark} · recipe {run.recipe} · {where}{overrides}"))
    return rows


def to_markdown(comparison: Comparison) -> str:
    """Markdown: the pairing, the means, the tests, the runs and a guide to reading them."""
    lines = [f"# Comparison of {len(comparison.runs)} runs", "", _md(_title(comparison)), ""]
    lines += [f"- {_md(line)}" for line in pairing_lines(comparison)]
    lines += ["", "## Means", ""]
    lines += _md_table(["run", "query mode", *comparison.metrics], _mean_rows(comparison), 2)
    lines += ["", "## Paired tests", ""]
    lines += _md_table(list(TEST_COLUMNS), _test_rows(comparison), 3)
    lines += ["", "## Power", ""]
    lines += _md_table(list(POWER_COLUMNS), power_rows(comparison), 3)
    lines += ["", power_guide(comparison)]
    lines += ["", "## Runs", ""]
    lines += [f"- **{_md(label)}**: {_md(text)}" for label, text in _sources(comparison)]
    lines += ["", "## How to read this", "", _md(how_to_read(comparison)), ""]
    return "\n".join(lines)


# The page fits a 1,280 px window: tables wrap their cells at spaces and scroll sideways
# inside their own box if they still do not fit; plots shrink to the width.
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 1400px; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 0.35em 0.6em; vertical-align: top;
         overflow-wrap: break-word; }
th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.label { min-width: 8em; max-width: 22em; }
tr.sig td { background: #fff4f0; }
.plots img { display: block; max-width: 100%; height: auto; margin: 0.5em 0 1.5em;
             border: 1px solid #eee; }
ul.pairing li, p.read { max-width: 75em; }
"""


def _breakable(text: str) -> str:
    """Escaped text that may wrap after `.` and `_` and before `@` (metric names, override
    keys), so that long names do not widen a table past the window."""
    escaped = html.escape(text)
    for char, marked in ((".", ".<wbr>"), ("_", "_<wbr>"), ("@", "<wbr>@")):
        escaped = escaped.replace(char, marked)
    return escaped


def _html_table(
    header: list[str], rows: list[list[str]], labels: int, marks: list[bool] | None = None
) -> str:
    esc = html.escape
    head = "".join(
        f'<th class="{"label" if j < labels else "num"}">{_breakable(h)}</th>'
        for j, h in enumerate(header)
    )
    body = []
    for i, row in enumerate(rows):
        cls = ' class="sig"' if marks and marks[i] else ""
        cells = "".join(
            f'<td class="label">{_breakable(c)}</td>'
            if j < labels
            # an interval, "[0.875, 0.990]", stays on one line
            else f'<td class="num">{esc(c).replace(", ", ",&nbsp;")}</td>'
            for j, c in enumerate(row)
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def to_html(comparison: Comparison) -> str:
    """A self-contained page: pairing, means, tests, runs, the guide and a plot per metric."""

    esc = html.escape
    pairing = "".join(f"<li>{esc(line)}</li>" for line in pairing_lines(comparison))
    means = _html_table(["run", "query mode", *comparison.metrics], _mean_rows(comparison), 2)
    significant = [bool(t.significant) for row in comparison.rows for t in row.tests]
    tests = _html_table(list(TEST_COLUMNS), _test_rows(comparison), 3, significant)
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
        f'<meta name="viewport" content="width=device-width">'
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>\n"
        f"<h1>{esc(title)}</h1>\n<p>{esc(_title(comparison))}</p>\n"
        f'<ul class="pairing">{pairing}</ul>\n'
        f'<h2>Means</h2><div id="means">{means}</div>\n'
        f'<h2>Paired tests</h2><div id="tests">{tests}</div>\n'
        f'<h2>Power</h2><div id="power">'
        f"{_html_table(list(POWER_COLUMNS), power_rows(comparison), 3)}</div>\n"
        f'<p class="read">{esc(power_guide(comparison))}</p>\n'
        f'<h2>Plots</h2><div class="plots">{plots}</div>\n'
        f"<h2>Runs</h2><ul>{runs}</ul>\n"
        f'<h2>How to read this</h2><p class="read">{esc(how_to_read(comparison))}</p>\n'
        "</body></html>\n"
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
