"""The worst-cases part of report.html: the lowest-scoring cases of each metric, with what
they expected and what was retrieved (and where it came from)."""

from __future__ import annotations

from heta_eval.records import EvaluationCaseResult, EvaluationReport
from heta_eval.reporting import data
from heta_eval.reporting.markup import cut as _cut
from heta_eval.reporting.markup import escape_text as _e

SHOWN_RETRIEVED = 5  # retrieved results shown per worst case


def _expected(result: EvaluationCaseResult) -> str:
    if result.expected is None:
        return '<span class="muted">—</span>'
    lines = []
    if result.expected.answers:
        answers = " | ".join(_cut(a, 200) for a in result.expected.answers[:5])
        lines.append(f"<b>answer:</b> {_e(answers)}")
    for item in result.expected.evidence[:SHOWN_RETRIEVED]:
        parts = []
        if item.reference_id:
            parts.append(item.reference_id)
        located = {k: v for k, v in item.locator.items() if k != "document_id"}
        if located:
            parts.append(", ".join(f"{k}={v}" for k, v in located.items()))
        if item.metadata:
            parts.append(", ".join(f"{k}={v}" for k, v in item.metadata.items()))
        text = f" “{_cut(item.text, 240)}”" if item.text else ""
        lines.append(f"<b>evidence:</b> {_e(' · '.join(parts))}{_e(text)}")
    more = len(result.expected.evidence) - SHOWN_RETRIEVED
    if more > 0:
        lines.append(f'<span class="muted">… {more} more evidence items</span>')
    return "<br>".join(lines)


def _retrieved(report: EvaluationReport, result: EvaluationCaseResult) -> str:
    if result.error is not None:
        return f"<b>{_e(result.error.stage)} error</b> {_e(result.error.error_type)}: " + _e(
            _cut(result.error.message, 300)
        )
    if not result.retrieved:
        return '<span class="muted">nothing retrieved</span>'
    relevant = data.expected_references(result)
    items = []
    for item in result.retrieved[:SHOWN_RETRIEVED]:
        hit = item.document_id in relevant
        chunk = item.chunk_id or ""
        if chunk.startswith(item.document_id):
            chunk = chunk[len(item.document_id) :]  # `doc#3` is shown as `#3`
        where = [f"chunk {chunk}" if chunk else ""]
        if item.page_index is not None:
            where.append(f"page {item.page_index + 1}")
        key = report.source_key(item)  # left out of the item when the key layout gives it
        if key:
            where.append(key)
        mark = '<span class="hit" title="named by the evidence">✓ </span>' if hit else ""
        items.append(
            f"<li>{mark}<b>{_e(item.document_id)}</b> <span class='muted'>score "
            f"{item.score:.3f} · {_e(' · '.join(w for w in where if w))}</span></li>"
        )
    more = len(result.retrieved) - SHOWN_RETRIEVED
    tail = f'<span class="muted">… {more} more</span>' if more > 0 else ""
    return f'<ol class="retrieved">{"".join(items)}</ol>{tail}'


def _case_row(
    report: EvaluationReport, rank: int, value: float, result: EvaluationCaseResult
) -> str:
    labels = ", ".join(f"{k}={v}" for k, v in result.labels.items())
    answer = f"<br><b>answer given:</b> {_e(_cut(result.answer, 300))}" if result.answer else ""
    return (
        f"<tr><td class='num'>{rank}</td><td class='num'>{value:.4f}</td>"
        f"<td>{_e(result.case_id)}<br><span class='muted'>unit {_e(result.unit_id)}"
        f"{'<br>' + _e(labels) if labels else ''}</span></td>"
        f"<td class='query'>{_e(_cut(result.query))}{answer}</td>"
        f"<td class='text'>{_expected(result)}</td>"
        f"<td class='retrieved'>{_retrieved(report, result)}</td></tr>"
    )


def worst_cases_section(report: EvaluationReport, metrics: list[str]) -> str:
    """One collapsible table per metric: its WORST_CASES lowest cases in the primary mode."""
    mode = report.primary_query_mode
    parts = []
    opened = " open"  # the first table is shown unfolded
    for metric in metrics:
        worst = data.worst_cases(report, mode, metric) if mode else []
        if not worst:
            values = data.metric_values(report, mode, metric) if mode else []
            if values:
                parts.append(
                    f'<p class="muted">{_e(metric)}: all {len(values)} scored cases reached '
                    f"{max(values):.4f}.</p>"
                )
            continue
        rows = "".join(_case_row(report, n, v, r) for n, (v, r) in enumerate(worst, 1))
        parts.append(
            f"<details{opened}><summary>{_e(metric)} · {len(worst)} lowest</summary>"
            '<div class="scroll"><table><thead><tr><th>#</th><th>value</th><th>case</th>'
            f"<th>query</th><th>expected</th><th>retrieved (top {SHOWN_RETRIEVED}, provenance)"
            f"</th></tr></thead><tbody>{rows}</tbody></table></div></details>"
        )
        opened = ""
    body = "".join(parts) or '<p class="muted">No scored cases.</p>'
    others = [m for m in report.query_modes if m != mode]
    elsewhere = (
        f" The other query modes ({_e(', '.join(others))}) are in report.json and in the "
        "per-case table of the MLflow run."
        if others
        else ""
    )
    return (
        f'<section id="worst"><h2>Worst cases · {_e(mode or "")}</h2><p class="muted">Up to '
        f"{data.WORST_CASES} lowest-scoring cases of each metric under the primary query mode, "
        "among those below the best value reached (ties by case id); ✓ marks a retrieved "
        "document that the case's evidence names."
        f"{elsewhere}</p>{body}</section>"
    )
