"""What a sweep prints when it ends: a table of its jobs and the command that compares them."""

from __future__ import annotations

from collections.abc import Sequence

from heta_eval.results.sweep_rows import (
    BestScore,
    SweepRow,
    differing_overrides,
    split_overrides,
)
from heta_eval.tracking.naming import PRIMARY_MODE_TAG

MAX_ERROR = 60  # characters of a failed job's error shown in its row
SWEEP_NOTE_START = "heta_eval sweep of "


def _what_differs(row: SweepRow, keys: Sequence[str]) -> str:
    """`recipe=bm25 recipe.chunk_size=64`: the row's values of the overrides that differ."""
    overrides = split_overrides(row.overrides)
    return " ".join(f"{k}={overrides[k]}" for k in keys if k in overrides) or "no overrides"


def _interval(row: SweepRow, metric: str) -> str:
    low, high = row.metrics.get(f"{metric}.ci_low"), row.metrics.get(f"{metric}.ci_high")
    return "—" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def compare_command(parent_run_id: str, tracking_uri: str, default_uri: str) -> str:
    """`heta-eval-compare <parent id>`, with `--tracking-uri` unless it is the default one."""
    command = f"heta-eval-compare {parent_run_id}"
    return command if tracking_uri == default_uri else f"{command} --tracking-uri {tracking_uri}"


def print_sweep_end(
    rows: Sequence[SweepRow], metric: str | None, parent_run_id: str, compare: str
) -> None:
    """One row per job (number, the overrides that differ, `metric` with its CI, status),
    then the best job on `metric` and the compare command."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    keys = differing_overrides(rows)
    finished = sum(r.ok for r in rows)
    title = f"sweep: {len(rows)} job(s), {finished} finished, {len(rows) - finished} failed"
    table = Table()
    table.add_column("job", justify="right")
    for key in keys:
        table.add_column(escape(key), overflow="fold")
    # A mode-free metric is each run's primary mode's: name the mode when it differs.
    modes = [row.tags.get(PRIMARY_MODE_TAG, "") for row in rows]
    show_modes = bool(metric) and "." not in (metric or "") and len(set(modes)) > 1
    if show_modes:
        table.add_column("primary mode")
    if metric:
        table.add_column(metric, justify="right")
        table.add_column("CI", justify="right")
    table.add_column("status")
    for row in rows:
        overrides = split_overrides(row.overrides)
        status = row.status
        if row.error:
            error = row.error if len(row.error) <= MAX_ERROR else row.error[: MAX_ERROR - 1] + "…"
            status += f": {error}"
        cells = [row.label, *(overrides.get(k, "—") for k in keys)]
        if show_modes:
            cells.append(row.tags.get(PRIMARY_MODE_TAG) or "—")
        if metric:
            value = row.metrics.get(metric)
            cells += ["—" if value is None else f"{value:.4f}", _interval(row, metric)]
        table.add_row(*(escape(c) for c in [*cells, status]))
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 120))
    console.print(title, markup=False)  # not the table's title: not padded to the width
    console.print(table)
    scored = [r for r in rows if r.ok and metric and r.metrics.get(metric) is not None]
    if metric and scored:
        best = max(scored, key=lambda r: r.metrics[metric])
        console.print(
            f"best {metric}: job {best.label} ({_what_differs(best, keys)}) "
            f"{best.metrics[metric]:.4f} {_interval(best, metric)}",
            soft_wrap=True,
            markup=False,
        )
    console.print(f"parent run: {parent_run_id}", soft_wrap=True, markup=False)
    console.print(f"compare the jobs: {compare}", soft_wrap=True, markup=False)


def sweep_note(rows: Sequence[SweepRow], best: BestScore | None) -> str:
    """The parent run's description (Markdown, the UI's *Description*): the jobs, what
    differs between them, the best job on the headline score and where the tables are."""
    finished = sum(r.ok for r in rows)
    keys = differing_overrides(rows)
    text = (
        f"{SWEEP_NOTE_START}{len(rows)} job(s) ({finished} finished, {len(rows) - finished} "
        f"failed) over {', '.join(f'`{k}`' for k in keys) or 'no overrides'}."
    )
    if best is not None:
        low, high = best.ci_low, best.ci_high
        interval = "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"
        text += (
            f" Best `{best.metric}`: job {best.row.label} (`{_what_differs(best.row, keys)}`) "
            f"{best.value:.4f}{interval}."
        )
    return (
        text + " One row per job in `sweep_summary.json`, the best job of each score in "
        "`sweep_best.json` (Artifacts); compare the jobs with `heta-eval-compare <this run id>`."
    )
