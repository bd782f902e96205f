"""`report.html`: a self-contained page (inline CSS, embedded PNGs) describing one run.

Everything taken from data is escaped; the page loads nothing from the network. Its size does
not grow with the number of cases: plots are aggregated and tables capped (the WORST_CASES
lowest cases per metric in the primary query mode with SHOWN_RETRIEVED results each, MAX_UNITS
knowledge bases, MAX_ERRORS failures).
"""

from __future__ import annotations

import json
from pathlib import Path

from heta_eval.config.secrets import mask_secrets
from heta_eval.records import EvaluationReport
from heta_eval.records.latency import ModeLatencies
from heta_eval.reporting import data, plots
from heta_eval.reporting.cases import worst_cases_section
from heta_eval.reporting.figures import FigureSet
from heta_eval.reporting.markup import cut as _cut
from heta_eval.reporting.markup import escape_text as _e
from heta_eval.reporting.markup import num as _num

REPORT_HTML = "report.html"
MAX_UNITS = 50  # knowledge-base rows shown
MAX_ERRORS = 20  # failed cases listed

_STYLE = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --head: #f6f8fa; --ok: #1a7f37; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: var(--fg);
  background: #fff; line-height: 1.4; }
header { background: #24292f; color: #fff; padding: 1.2em 2em; }
header h1 { margin: 0 0 0.3em 0; font-size: 1.5em; }
header p { margin: 0.15em 0; color: #d0d7de; }
nav { padding: 0.6em 2em; border-bottom: 1px solid var(--line); background: var(--head); }
nav a { margin-right: 1.2em; color: #0969da; text-decoration: none; }
main { padding: 0 2em 3em 2em; }
h2 { border-bottom: 1px solid var(--line); padding-bottom: 0.2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
.scroll { overflow-x: auto; max-width: 100%; }
th, td { border: 1px solid var(--line); padding: 0.3em 0.6em; vertical-align: top;
  text-align: left; }
th { background: var(--head); }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.text { max-width: 22em; overflow-wrap: anywhere; }
td.query { max-width: 18em; overflow-wrap: anywhere; }
td.retrieved { max-width: 30em; overflow-wrap: anywhere; }
.muted { color: var(--muted); font-size: 0.88em; }
.hit { color: var(--ok); font-weight: 600; }
.primary { font-weight: 600; }
.plots { display: flex; flex-wrap: wrap; gap: 0.6em; }
.plots img { border: 1px solid #eaeef2; }
details { margin: 0.4em 0; }
summary { cursor: pointer; font-weight: 600; }
ol.retrieved { margin: 0; padding-left: 1.4em; }
pre { background: var(--head); padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 2px;
  margin-right: 0.3em; vertical-align: -0.05em; }
"""


def _mode_label(report: EvaluationReport, mode: str, index: int) -> str:
    swatch = f'<span class="swatch" style="background:{plots.color(index)}"></span>'
    primary = " (primary)" if mode == report.primary_query_mode else ""
    return f"{swatch}{_e(mode)}{primary}"


def _header(report: EvaluationReport) -> str:
    seconds = (report.finished_at - report.started_at).total_seconds()
    cases = len({(r.unit_id, r.case_id) for r in report.case_results})
    failed = len(report.failed_cases)
    top_k = report.run.top_k
    modes = ", ".join(
        f"{m} (primary)" if m == report.primary_query_mode else m for m in report.query_modes
    )
    title = f"{report.benchmark.key} · recipe {report.recipe_manifest.get('name', '?')}"
    return (
        f"<header><h1>{_e(title)}</h1>"
        f"<p>{cases} cases · {len(report.case_results)} case results · {failed} failed · "
        f"query modes: {_e(modes)}"
        + (f" · top_k {_e(top_k)}" if top_k is not None else "")
        + "</p>"
        f"<p>knowledge base {_e(report.knowledge_base_name)} · report {_e(report.report_id)} · "
        f"{_e(report.started_at.isoformat(timespec='seconds'))} → "
        f"{_e(report.finished_at.isoformat(timespec='seconds'))} ({seconds:.1f} s)</p>"
        f"{_reused(report)}"
        "</header>"
    )


def _reused(report: EvaluationReport) -> str:
    """A line saying that this run evaluated nothing and shows an earlier result."""
    source = report.run.reused_from
    if source is None:
        return ""
    origin = f"tracking run {source.tracking_run_id}" if source.tracking_run_id else "a run"
    return (
        "<p class='reused'><strong>Reused result</strong>: the same configuration, data and "
        f"code were evaluated by {_e(origin)} on "
        f"{_e(source.finished_at.isoformat(timespec='seconds'))} (report "
        f"{_e(source.report_id)}); this run evaluated nothing, and the times, cache counts and "
        "build times shown are that run's. runner.resume=false evaluates again.</p>"
    )


def _nav(sections: list[tuple[str, str]]) -> str:
    links = "".join(f'<a href="#{_e(anchor)}">{_e(title)}</a>' for anchor, title in sections)
    return f"<nav>{links}</nav>"


def _headline(
    report: EvaluationReport, metrics: list[str], modes: list[str], figures: FigureSet
) -> str:
    head = "".join(f"<th>{_mode_label(report, m, i)}</th>" for i, m in enumerate(modes))
    rows = []
    cells: dict[tuple[str, str], tuple[float, float | None, float | None]] = {}
    confidence = 0.95
    for metric in metrics:
        tds = []
        for mode in modes:
            key = f"{mode}.{metric}"
            detail = report.score_details.get(key)
            mean = report.score_summary.get(key)
            if detail is None and mean is None:
                tds.append('<td class="num">—</td>')
                continue
            text = _num(mean)
            note = ""
            if detail is not None:
                confidence = detail.confidence
                if detail.ci_low is not None and detail.ci_high is not None:
                    text += f" [{detail.ci_low:.3f}, {detail.ci_high:.3f}]"
                note = f"n={detail.scored}"
                if detail.skipped:
                    note += f" · skipped {detail.skipped}"
                if detail.undetermined:
                    note += f" · undetermined {detail.undetermined}"
                if detail.failed:
                    note += f" · failed {detail.failed}"
                if mean is not None:
                    cells[(mode, metric)] = (mean, detail.ci_low, detail.ci_high)
            elif mean is not None:
                cells[(mode, metric)] = (mean, None, None)
            why = "; ".join(
                f"{n}x {reason}" for reason, n in (detail.skipped_reasons if detail else {}).items()
            )
            tip = f' title="skipped: {_e(why)}"' if why else ""
            tds.append(
                f'<td class="num">{_e(text)}<br><span class="muted"{tip}>{_e(note)}</span></td>'
            )
        rows.append(f"<tr><td>{_e(metric)}</td>{''.join(tds)}</tr>")
    table = (
        f'<div class="scroll"><table><thead><tr><th>metric</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
        f'<p class="muted">Each cell: mean over the scored cases with its {confidence:.0%} '
        "bootstrap confidence interval; skipped and undetermined cases are not averaged in.</p>"
    )
    summary = {
        "kind": "summary",
        "metrics": metrics,
        "modes": modes,
        "cells": [[mode, metric, *cell] for (mode, metric), cell in cells.items()],
        "confidence": confidence,
    }
    plot = figures.add(summary, "metric means") if cells else ""
    return f'<section id="metrics"><h2>Metrics</h2>{table}<div class="plots">{plot}</div></section>'


def _distributions(
    report: EvaluationReport, metrics: list[str], modes: list[str], figures: FigureSet
) -> str:
    images = []
    for metric in metrics:
        values = {mode: data.metric_values(report, mode, metric) for mode in modes}
        if any(values.values()):
            spec = {"kind": "histogram", "metric": metric, "values": values}
            images.append(figures.add(spec, f"distribution of {metric}"))
    body = "".join(images) or '<p class="muted">No scored cases.</p>'
    return (
        '<section id="distributions"><h2>Distributions over cases</h2>'
        f'<div class="plots">{body}</div></section>'
    )


def _batches(count: float) -> str:
    """A number of batches: whole when it is (every query of each batch in the run)."""
    return f"{round(count)}" if abs(count - round(count)) < 1e-6 else f"{count:.2f}"


def _latency_row(report: EvaluationReport, mode: str, index: int, found: ModeLatencies) -> str:
    label = _mode_label(report, mode, index)
    if found.is_batched:
        # A batch mean is not a query's latency: no percentiles, no maximum.
        alone = f"; {len(found.alone)} more measured alone, not included" if found.alone else ""
        how = (
            f"mean over {_batches(found.batches)} batch(es) of up to {found.largest_batch} "
            f"queries{alone}"
        )
        mean = found.batched_mean or 0.0
        cells = f"<td class='num'>{mean * 1000:.1f}</td>" + "<td class='num'>—</td>" * 3
        return (
            f"<tr><td>{label}</td><td>{_e(how)}</td><td class='num'>{len(found.batched)}</td>"
            f"{cells}</tr>"
        )
    stats = data.latency_stats(found.alone)
    if stats is None:
        return ""
    return (
        f"<tr><td>{label}</td><td>each query alone</td><td class='num'>{stats.count}</td>"
        + "".join(
            f"<td class='num'>{v * 1000:.1f}</td>"
            for v in (stats.mean, stats.p50, stats.p95, stats.max)
        )
        + "</tr>"
    )


def _latency(report: EvaluationReport, modes: list[str], figures: FigureSet) -> str:
    by_mode = {mode: data.latencies(report, mode) for mode in modes}
    rows = [_latency_row(report, mode, i, by_mode[mode]) for i, mode in enumerate(modes)]
    rows = [row for row in rows if row]
    if not rows:
        return '<section id="latency"><h2>Latency</h2><p class="muted">No latencies.</p></section>'
    table = (
        "<table><thead><tr><th>query mode</th><th>measured</th><th>queries</th>"
        "<th>mean ms</th><th>p50 ms</th><th>p95 ms</th><th>max ms</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    batched = [mode for mode in modes if by_mode[mode].is_batched]
    note = ""
    if batched:
        note = (
            f'<p class="muted">{_e(", ".join(batched))}: queries retrieved together '
            "(<code>runner.query_batch_size</code>); each batch's seconds are divided evenly "
            "among its queries, so the mean is seconds per query over the batches, not a "
            "query's own latency, and there are no percentiles. "
            "<code>runner.query_batch_size=1</code> measures each query alone.</p>"
        )
    hits = report.run.cache.get("response_hits")
    if isinstance(hits, int) and hits > 0:
        note += (
            f'<p class="muted">{hits} response(s) came from the response cache: their '
            "latencies are those measured when they were stored, with that measurement's "
            "batch size.</p>"
        )
    alone = {mode: list(by_mode[mode].alone) for mode in modes if not by_mode[mode].is_batched}
    alone = {mode: values for mode, values in alone.items() if values}
    plot = ""
    if alone:
        image = figures.add({"kind": "latency", "latencies": alone}, "query latency")
        plot = f'<div class="plots">{image}</div>'
    return f'<section id="latency"><h2>Latency</h2>{table}{note}{plot}</section>'


def _slices(report: EvaluationReport, metrics: list[str], modes: list[str]) -> str:
    rows = data.slice_rows(report)
    if not rows:
        return ""
    parts = []
    for i, mode in enumerate(modes):
        head = "".join(f"<th>{_e(m)}</th>" for m in metrics)
        body = "".join(
            f"<tr><td>{_e(row.label)}</td><td>{_e(row.value)}</td>"
            f"<td class='num'>{row.cases}</td>"
            + "".join(f"<td class='num'>{_num(row.means.get(f'{mode}.{m}'))}</td>" for m in metrics)
            + "</tr>"
            for row in rows
        )
        opened = " open" if i == 0 else ""
        parts.append(
            f"<details{opened}><summary>{_mode_label(report, mode, i)}</summary>"
            '<div class="scroll"><table><thead><tr><th>label</th><th>value</th><th>cases</th>'
            f"{head}</tr></thead><tbody>{body}</tbody></table></div></details>"
        )
    return f'<section id="slices"><h2>Slices</h2>{"".join(parts)}</section>'


def _errors(report: EvaluationReport) -> str:
    failed = report.failed_cases
    if not failed:
        return ""
    counts = "".join(
        f"<tr><td>{_e(stage)}</td><td>{_e(kind)}</td><td class='num'>{n}</td></tr>"
        for stage, kind, n in data.error_counts(report)
    )
    examples = "".join(
        f"<tr><td>{_e(r.case_id)}</td><td>{_e(r.query_mode)}</td><td>{_e(r.error.stage)}</td>"
        f"<td class='text'>{_e(r.error.error_type)}: {_e(_cut(r.error.message, 400))}</td></tr>"
        for r in failed[:MAX_ERRORS]
        if r.error is not None
    )
    return (
        f'<section id="errors"><h2>Failed cases ({len(failed)})</h2>'
        "<table><thead><tr><th>stage</th><th>error</th><th>case results</th></tr></thead>"
        f"<tbody>{counts}</tbody></table><details><summary>first {min(len(failed), MAX_ERRORS)}"
        "</summary><table><thead><tr><th>case</th><th>mode</th><th>stage</th><th>error</th>"
        f"</tr></thead><tbody>{examples}</tbody></table></details></section>"
    )


def _knowledge_bases(report: EvaluationReport) -> str:
    manifests = report.knowledge_base_manifests
    if not manifests:
        return ""
    rows = "".join(
        f"<tr><td>{_e(kb.name)}</td><td class='num'>{kb.counts.get('documents', 0)}</td>"
        f"<td class='num'>{kb.counts.get('chunks', 0)}</td>"
        f"<td class='num'>{kb.build_seconds:.2f}</td><td>{_e(kb.cache_status)}</td>"
        f"<td class='num'>{len(kb.document_errors)}</td></tr>"
        for kb in manifests[:MAX_UNITS]
    )
    more = (
        f'<p class="muted">… and {len(manifests) - MAX_UNITS} more.</p>'
        if len(manifests) > MAX_UNITS
        else ""
    )
    return (
        f'<section id="kb"><h2>Knowledge bases ({len(manifests)}: '
        f"{_e(data.knowledge_base_counts(manifests))})"
        "</h2>"
        "<table><thead><tr><th>name</th><th>documents</th><th>chunks</th><th>build s</th>"
        f"<th>cache</th><th>document errors</th></tr></thead><tbody>{rows}</tbody></table>"
        f"{more}</section>"
    )


def _configuration(report: EvaluationReport) -> str:
    recipe = json.dumps(mask_secrets(report.recipe_manifest), indent=2, default=str)
    benchmark = json.dumps(report.benchmark.model_dump(mode="json"), indent=2)
    return (
        '<section id="config"><h2>Configuration</h2>'
        f"<details><summary>recipe</summary><pre>{_e(recipe)}</pre></details>"
        f"<details><summary>benchmark</summary><pre>{_e(benchmark)}</pre></details></section>"
    )


def render_html(report: EvaluationReport, figures: FigureSet | None = None) -> str:
    """The whole report page as one self-contained HTML string; its figures are drawn here,
    or, with a collecting `figures`, left as placeholders for `figures.fill`."""
    figures = figures or FigureSet()
    metrics = data.metric_names(report)
    modes = data.ordered_modes(report)
    sections = [
        ("metrics", "Metrics", _headline(report, metrics, modes, figures)),
        ("distributions", "Distributions", _distributions(report, metrics, modes, figures)),
        ("latency", "Latency", _latency(report, modes, figures)),
        ("slices", "Slices", _slices(report, metrics, modes)),
        ("worst", "Worst cases", worst_cases_section(report, metrics)),
        ("errors", "Failures", _errors(report)),
        ("kb", "Knowledge bases", _knowledge_bases(report)),
        ("config", "Configuration", _configuration(report)),
    ]
    present = [(anchor, title) for anchor, title, body in sections if body]
    title = f"{report.benchmark.key} · {report.recipe_manifest.get('name', '?')} · heta_eval"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>\n"
        f"{_header(report)}\n{_nav(present)}\n<main>\n"
        + "\n".join(body for _, _, body in sections if body)
        + "\n</main></body></html>\n"
    )


def write_html_report(report: EvaluationReport, path: Path) -> Path:
    """Write `render_html(report)` to `path` atomically (temp file + rename)."""
    return write_page(render_html(report), path)


def write_page(page: str, path: Path) -> Path:
    """Write a rendered page to `path` atomically (temp file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path
