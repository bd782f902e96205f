"""`heta-eval-runs`' table: the runs of a `load_runs` frame, one table per benchmark, as wide
as the terminal (120 columns when piped, or `$COLUMNS`).

A metric column never mixes benchmarks: runs of several benchmarks get one table each. The
columns that do not fit the width are left out, and named, in the order given; the run name
is cut to RUN_NAME_WIDTH characters (all of it is in the MLflow run and `--output`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from heta_eval.results.runs_frame import benchmark_column

PIPE_WIDTH = 120  # characters per line when the output is not a terminal
RUN_NAME_WIDTH = 40
ALWAYS = ("run_name", "status")  # shown whatever the width


def _cell(value: Any, whole: bool) -> str:
    import pandas as pd

    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.0f}" if whole else f"{value:.4f}"
    if isinstance(value, pd.Timestamp):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def _is_whole(frame: Any, column: str) -> bool:
    """Counts (cases.failed) print as integers, scores always with 4 decimals."""
    values = frame[column].dropna()
    if frame[column].dtype.kind not in "fiu":
        return False
    whole = bool(len(values)) and bool((values % 1 == 0).all())
    whole = whole and not (values.between(0, 1).all() and values.max() < 2)
    return whole or column.startswith("cases.")


def header(column: str) -> str:
    """A column's heading: its name without the `tags.` prefix."""
    return column.removeprefix("tags.")


def cells(frame: Any, column: str) -> list[str]:
    """The column's values as shown (the run name cut to RUN_NAME_WIDTH)."""
    whole = _is_whole(frame, column)
    shown = [_cell(value, whole) for value in frame[column]]
    if column == "run_name":
        shown = [v if len(v) <= RUN_NAME_WIDTH else v[: RUN_NAME_WIDTH - 1] + "…" for v in shown]
    return shown


def fit_columns(
    columns: Sequence[str],
    shown: dict[str, list[str]],
    width: int,
    required: Sequence[str] = (),
) -> tuple[list[str], list[str]]:
    """(columns that fit in `width` characters in the order given, those left out); each
    column takes its widest cell or heading plus a border and two spaces of padding. The
    run name, the status and `required` (the headline score) are always kept: their room
    is set aside first."""
    must = {*ALWAYS, *required}

    def need(column: str) -> int:
        return max([len(header(column)), *(len(v) for v in shown[column])]) + 3

    used = 1 + sum(need(c) for c in columns if c in must)  # 1: the table's left border
    kept, dropped = [], []
    for column in columns:
        if column in must:
            kept.append(column)
        elif used + need(column) <= width:
            kept.append(column)
            used += need(column)
        else:
            dropped.append(column)
    return kept, dropped


def groups(frame: Any, columns: Sequence[str]) -> list[tuple[str | None, Any]]:
    """The frame split by benchmark when its runs evaluated more than one and a metric is
    shown: [(benchmark, runs)], else [(None, frame)]."""
    metrics = set(frame.attrs.get("metric_columns", []))
    column = benchmark_column(frame)
    if column is None or not metrics & set(columns):
        return [(None, frame)]
    keys = frame[column].fillna("(unknown benchmark)").astype(str)
    if keys.nunique() < 2:
        return [(None, frame)]
    return [(key, frame[keys == key]) for key in dict.fromkeys(keys)]


def print_runs(frame: Any, columns: Sequence[str], *, fit: bool = True) -> None:
    """Print the chosen columns, one row per run and one table per benchmark; with `fit`,
    only the columns that fit the width (the others are named below the table)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        width = int(os.environ.get("COLUMNS") or PIPE_WIDTH)
        console = Console(width=width, soft_wrap=False)
    width = console.width
    parts = groups(frame, columns)
    if len(parts) > 1:
        console.print(
            f"{len(frame)} runs of {len(parts)} benchmarks: one table each (a metric is not "
            "comparable across benchmarks)",
            markup=False,
        )
    for benchmark, part in parts:
        # A column empty for every run of this benchmark says nothing here.
        present = [c for c in columns if c in ALWAYS or part[c].notna().any()]
        shown = {c: cells(part, c) for c in present}
        required = [c for c in [frame.attrs.get("headline_column")] if c in present]
        kept, dropped = fit_columns(present, shown, width, required) if fit else (present, [])
        title = f"{len(part)} run{'' if len(part) == 1 else 's'}"
        title += f" · benchmark {benchmark}" if benchmark else ""
        console.print(title, markup=False)  # not a table title: no padding to the width
        table = Table()
        for column in kept:
            numeric = part[column].dtype.kind in "fiu"
            table.add_column(
                escape(header(column)),
                justify="right" if numeric else "left",
                overflow="fold",
                no_wrap=column == "run_name",
            )
        for i in range(len(part)):
            table.add_row(*(escape(shown[c][i]) for c in kept))
        console.print(table)
        if dropped:
            console.print(
                f"not shown ({width} columns wide): {', '.join(header(c) for c in dropped)}; "
                "pick columns with --columns, or write them all with --output runs.csv",
                markup=False,
            )
