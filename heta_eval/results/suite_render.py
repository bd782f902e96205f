"""A suite's table as Markdown (the parent run's description and `suite_table.md`), a
self-contained HTML page (`suite_table.html`, which MLflow's artifact view renders), JSON
(`suite_table.json`) and a rich table for the terminal."""

from __future__ import annotations

import html
import json
from typing import Any

from heta_eval.results.suite_table import Cell, ReferenceRow, SuiteTable

SUITE_FILES = {"markdown": "suite_table.md", "html": "suite_table.html", "json": "suite_table.json"}
MACRO = "macro average"
MACRO_KEYS = ("column", "value", "ci_low", "ci_high", "members")


def _num(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}"


def cell_text(cell: Cell | None) -> str:
    """`0.6863 [0.641, 0.727]`, or — when the job failed or the metric is absent."""
    if cell is None or cell.value is None:
        return "—"
    other = f" ({cell.metric})" if cell.metric else ""
    if cell.ci_low is None or cell.ci_high is None:
        return _num(cell.value) + other
    return f"{_num(cell.value)} [{cell.ci_low:.3f}, {cell.ci_high:.3f}]{other}"


def verdict(row: ReferenceRow) -> str:
    """✓ within the tolerance, ✗ outside it, — when not checked (a different setup)."""
    if row.ok is None:
        return "— (not checked)"
    tol = f"±{row.reference.tolerance:g}"
    return f"✓ {tol}" if row.ok else f"✗ {tol}"


def main_rows(table: SuiteTable) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the members x columns table, the macro average last."""
    with_refs = bool(table.suite.references)
    header = ["member", *table.columns, *(["published", "Δ"] if with_refs else [])]
    rows = []
    for member in table.members:
        cells = [cell_text(table.cells.get((member, c))) for c in table.columns]
        published, delta = "—", "—"
        for column in table.columns:
            ref = table.headline_reference(member, column)
            if ref is not None:
                scoped = " *" if ref.reference.scope_units else ""
                published = f"{ref.reference.value:.4f} ({ref.reference.recipe}){scoped}"
                delta = _signed(ref.delta) + (" ✓" if ref.ok else " ✗" if ref.ok is False else "")
                break
        rows.append([member, *cells, *([published, delta] if with_refs else [])])
    macro = []
    for column in table.columns:
        mean, low, high, n = table.macro(column)
        text = _num(mean) if low is None or high is None else f"{mean:.4f} ≈[{low:.3f}, {high:.3f}]"
        if 0 < n < len(table.members):
            text += f" ({n} of {len(table.members)})"
        macro.append(text)
    rows.append([MACRO, *macro, *(["", ""] if with_refs else [])])
    return header, rows


REFERENCE_COLUMNS = ("member", "recipe", "metric", "published", "ours", "Δ", "check", "source")


def reference_rows(table: SuiteTable) -> list[list[str]]:
    """The 2CR-style rows: every reference the sweep ran, with its citation and setup."""
    rows = []
    for ref in table.references:
        r = ref.reference
        source = r.source + (f" — differs: {r.differs}" if r.differs else "")
        if ref.cases is not None:
            source += f" — over {ref.cases} case(s) of {', '.join(r.scope_units)}"
        if ref.note:
            source += f" — {ref.note}"
        rows.append(
            [
                r.member,
                ref.column,
                r.metric,
                f"{r.value:.4f}",
                _num(ref.ours),
                _signed(ref.delta),
                verdict(ref),
                source,
            ]
        )
    return rows


def title(table: SuiteTable) -> str:
    return (
        f"suite {table.suite.name}: {len(table.members)} member(s) x {len(table.columns)} "
        f"column(s), {table.metric} (mean [95% CI])"
    )


def _md_cell(text: str) -> str:
    """A table cell: no raw HTML, no inline link (`](` escaped), one line."""
    escaped = html.escape(text, quote=False).replace("|", "\\|").replace("](", "]\\(")
    return escaped.replace("\r", " ").replace("\n", " ")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |"]
    lines.append("| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |")
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines


def guide(table: SuiteTable) -> str:
    return (
        f"Cells: each job's mean {table.metric} under its primary query mode, with its 95% "
        "bootstrap CI (a member scored under another metric names it, and is not averaged). "
        "The macro average is the unweighted mean over the members with a "
        "value; its interval (≈) combines the members' CIs as independent normal errors. "
        "Published: a reference number for that member's recipe and metric, with Δ = ours - "
        "published; ✓/✗ say whether it is within the stated tolerance (a reference restricted "
        "to some documents, marked *, is compared with our mean over those documents' cases; "
        "the References say which)."
    )


def to_markdown(table: SuiteTable) -> str:
    header, rows = main_rows(table)
    lines = [f"### {_md_cell(title(table))}", "", *_md_table(header, rows), ""]
    if table.references:
        lines += ["References:", "", *_md_table(list(REFERENCE_COLUMNS), reference_rows(table))]
        lines.append("")
    if table.failed:
        lines += ["Not in the table (failed jobs): " + "; ".join(table.failed), ""]
    lines += [guide(table), ""]
    return "\n".join(lines)


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.2em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; vertical-align: top; }
th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.macro td { font-weight: 600; border-top: 2px solid #888; }
td.ok { color: #116611; } td.miss { color: #b00020; }
td.wrap { text-align: right; white-space: nowrap; }
tr.src td { font-size: 0.85em; color: #555; border-top: none; padding-top: 0; }
tr.ref td { border-bottom: none; }
p { max-width: 60em; }
"""


def _html_table(
    header: list[str], rows: list[list[str]], macro_last: bool, source_last: bool = False
) -> str:
    esc = html.escape
    shown = header[:-1] if source_last else header
    head = "".join(f"<th>{esc(h)}</th>" for h in shown)
    body = []
    for i, row in enumerate(rows):
        cls = ' class="macro"' if macro_last and i == len(rows) - 1 else ""
        cells = []
        for j, text in enumerate(row):
            kind = "label" if j == 0 else "num"
            if header[j] == "published":
                kind = "wrap"  # the value, its recipe and the documents it covers
            elif text.startswith("✓") or text.endswith("✓"):
                kind = "num ok"
            elif text.startswith("✗") or text.endswith("✗"):
                kind = "num miss"
            cells.append(f'<td class="{kind}">{esc(text)}</td>')
        if source_last:
            # The citation on a row of its own under its numbers: readable in a narrow frame.
            body.append(f'<tr class="ref">{"".join(cells[:-1])}</tr>')
            span = len(header) - 1
            body.append(f'<tr class="src"><td colspan="{span}">{esc(row[-1])}</td></tr>')
            continue
        body.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def to_html(table: SuiteTable) -> str:
    esc = html.escape
    header, rows = main_rows(table)
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title(table))}</title><style>{_STYLE}</style></head><body>",
        f"<h2>{esc(title(table))}</h2>",
        f"<p>{esc(table.suite.description)}</p>" if table.suite.description else "",
        _html_table(header, rows, macro_last=True),
    ]
    if table.references:
        parts += [
            "<h3>References</h3>",
            _html_table(list(REFERENCE_COLUMNS), reference_rows(table), False, True),
        ]
    if table.failed:
        parts.append(f"<p>Not in the table (failed jobs): {esc('; '.join(table.failed))}</p>")
    parts += [f"<p>{esc(guide(table))}</p>", "</body></html>\n"]
    return "\n".join(p for p in parts if p)


def to_json(table: SuiteTable) -> dict[str, Any]:
    """Every number of the table, for programs (`suite_table.json`)."""
    return {
        "suite": table.suite.name,
        "definition": table.suite.model_dump(mode="json"),
        "metric": table.metric,
        "members": table.members,
        "columns": table.columns,
        "cells": [
            {
                "member": m,
                "column": c,
                "run_id": cell.run_id,
                "value": cell.value,
                "ci_low": cell.ci_low,
                "ci_high": cell.ci_high,
                "scored": cell.scored,
                "metric": cell.metric or table.metric,
            }
            for (m, c), cell in table.cells.items()
        ],
        "macro": [
            dict(
                zip(
                    ("column", "value", "ci_low", "ci_high", "members"),
                    (c, *table.macro(c)),
                    strict=True,
                )
            )
            for c in table.columns
        ],
        "references": [
            {
                **ref.reference.model_dump(mode="json"),
                "column": ref.column,
                "run_id": ref.run_id,
                "ours": ref.ours,
                "delta": ref.delta,
                "ok": ref.ok,
                "scored_cases": ref.cases,
                "note": ref.note,
            }
            for ref in table.references
        ],
        "failed": table.failed,
    }


def to_texts(table: SuiteTable) -> dict[str, str]:
    return {
        "markdown": to_markdown(table),
        "html": to_html(table),
        "json": json.dumps(to_json(table), indent=2, ensure_ascii=False) + "\n",
    }


def print_suite_table(table: SuiteTable) -> None:
    """The table in the terminal, then the references."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 160))
    header, rows = main_rows(table)
    main = Table(title=escape(title(table)), title_justify="left")
    for i, name in enumerate(header):
        main.add_column(escape(name), justify="left" if i == 0 else "right")
    for i, row in enumerate(rows):
        main.add_row(*(escape(c) for c in row), end_section=i == len(rows) - 2)
    console.print(main)
    if table.references:
        refs = Table(
            title="references (published, ours, Δ = ours - published)", title_justify="left"
        )
        for name in REFERENCE_COLUMNS:
            refs.add_column(name, overflow="fold")
        for row in reference_rows(table):
            refs.add_row(*(escape(c) for c in row))
        console.print(refs)
    for line in table.failed:
        console.print(f"not in the table: {line}", markup=False, soft_wrap=True)
