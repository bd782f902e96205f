"""`heta-eval-reproduce`: the suites' published numbers, rerun where the data is present, in
a 2CR-style matrix; `--check` exits 1 when a checked number is missed."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from heta_eval.sweep.reproduce import MatrixRow, read_suite, run_matrix, suite_names

PROG = "heta-eval-reproduce"
DATA_ENV = "HETA_EVAL_DATA_ROOT"
COLUMNS = ("suite", "member", "recipe", "metric", "published", "ours", "Δ", "✓", "source")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Rerun the published reference numbers of the suites (conf/suite/) whose "
        "data is present and print them beside ours: benchmark, recipe, metric, published, "
        "ours, Δ, and ✓ within the stated tolerance (rows without a tolerance are a different "
        "setup, shown for reference). Rows whose data is absent are listed as not run.",
    )
    parser.add_argument(
        "--data-root",
        type=Path,
        default=os.environ.get(DATA_ENV),
        help=f"directory holding each suite's data (uda/, beir/<dataset>/); default ${DATA_ENV}",
    )
    parser.add_argument("--suite", action="append", help="only this suite (repeatable)")
    parser.add_argument("--member", action="append", help="only this member (repeatable)")
    parser.add_argument("--quick", action="store_true", help="only the quick rows (CI)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a checked row misses")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("outputs") / "reproduce",
        help="paths.root of the runs (their build cache is reused); matrix.md and "
        "matrix.json are written here (default outputs/reproduce)",
    )
    return parser


def _cells(row: object) -> list[str]:

    assert isinstance(row, MatrixRow)
    ref = row.reference
    source = ref.source + (f" — differs: {ref.differs}" if ref.differs else "")
    if ref.scope_units:
        source += f" — over {row.cases if row.cases is not None else '?'} case(s) of "
        source += ", ".join(ref.scope_units)
    if row.not_run:
        mark = f"not run: {row.not_run}"
    elif row.ok is None:
        mark = "— (not checked)"
    else:
        mark = ("✓" if row.ok else "✗") + f" ±{ref.tolerance:g}"
    return [
        row.suite,
        ref.member,
        ref.recipe + (" " + " ".join(ref.overrides) if ref.overrides else ""),
        ref.metric,
        f"{ref.value:.4f}",
        "—" if row.ours is None else f"{row.ours:.4f}",
        "—" if row.delta is None else f"{row.delta:+.4f}",
        mark,
        source,
    ]


def _markdown(rows: Sequence[object]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        cells = [c.replace("|", "\\|") for c in _cells(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `heta-eval-reproduce`; returns the exit status."""
    args = _parser().parse_args(argv)
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    try:
        names = args.suite or suite_names()
        suites = [read_suite(name) for name in names]
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    data_root = Path(args.data_root).expanduser().resolve() if args.data_root else None
    out = args.out.expanduser().resolve()
    rows = run_matrix(suites, data_root, out, quick=args.quick, members=args.member or ())
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 200))
    table = Table(title="reproduction matrix (Δ = ours - published)", title_justify="left")
    for name in COLUMNS:
        table.add_column(
            name, overflow="fold", justify="right" if name in ("published", "ours", "Δ") else "left"
        )
    for row in rows:
        table.add_row(*(escape(c) for c in _cells(row)))
    console.print(table)
    out.mkdir(parents=True, exist_ok=True)
    (out / "matrix.md").write_text(_markdown(rows), encoding="utf-8")
    payload = [
        {
            **r.reference.model_dump(mode="json"),
            "suite": r.suite,
            "ours": r.ours,
            "delta": r.delta,
            "ok": r.ok,
            "scored_cases": r.cases,
            "not_run": r.not_run,
            "seconds": r.seconds,
            "run_dir": r.run_dir,
        }
        for r in rows
    ]
    (out / "matrix.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    ran = [r for r in rows if r.not_run is None]
    checked = [r for r in ran if r.ok is not None]
    missed = [r for r in checked if not r.ok]
    console.print(
        f"{len(rows)} reference(s): {len(ran)} run, {len(rows) - len(ran)} not run; "
        f"{len(checked)} checked, {len(missed)} missed · {out / 'matrix.md'}",
        soft_wrap=True,
        markup=False,
    )
    if args.check and missed:
        for r in missed:
            print(
                f"{PROG}: miss: {r.suite} {r.reference.member} {r.reference.recipe} "
                f"{r.reference.metric}: ours {r.ours:.4f}, published {r.reference.value:.4f} "
                f"± {r.reference.tolerance:g}",
                file=sys.stderr,
            )
        return 1
    if args.check and not checked:
        print(f"{PROG}: no checked row was run (is --data-root right?)", file=sys.stderr)
        return 1
    return 0


def cli() -> None:
    """Console entry point (exits with `main`'s status)."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
