"""`heta-eval-runs`: the runs of an experiment or a sweep as a table (or a file)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from heta_eval.results.runs_frame import (
    RunsError,
    default_columns,
    load_runs,
    select_columns,
    write_frame,
)
from heta_eval.results.runs_table import print_runs
from heta_eval.results.suite_frame import SuiteTableError, load_suite, table_frame
from heta_eval.results.suite_render import print_suite_table


def main(argv: Sequence[str] | None = None) -> int:
    """`heta-eval-runs`: print (or write) the runs of an experiment or sweep as a table."""
    parser = argparse.ArgumentParser(
        prog="heta-eval-runs",
        description="The runs of an MLflow experiment or of one sweep, one row per run: the "
        "run name, status, the overrides that differ and the headline metrics, as wide as the "
        "terminal (120 columns when piped); one table per benchmark.",
    )
    parser.add_argument("--experiment", default="heta_eval", help="MLflow experiment name")
    parser.add_argument("--sweep", help="a sweep id (tag heta_eval.sweep_id) or sweep directory")
    parser.add_argument(
        "--root",
        help="paths.root of the runs (store ROOT/mlflow.db; default ./outputs, else the "
        "store heta-eval wrote to last)",
    )
    parser.add_argument("--tracking-uri", help="MLflow tracking URI (overrides --root)")
    parser.add_argument(
        "--output", "-o", type=Path, help="write all columns to .csv/.parquet/.json"
    )
    parser.add_argument(
        "--columns",
        nargs="+",
        metavar="PATTERN",
        help="columns to print, in this order (shell patterns, e.g. run_name 'ndcg_at_*')",
    )
    parser.add_argument(
        "--include-sweep-parents", action="store_true", help="also list sweep parent runs"
    )
    parser.add_argument(
        "--suite",
        nargs="?",
        const="",
        metavar="SUITE",
        help="the members x recipes table of a suite sweep: a suite name (its latest sweep), "
        "a sweep id or directory, or the parent run id; alone, the latest suite sweep",
    )
    args = parser.parse_args(argv)
    if args.suite is not None:
        return _print_suite(args)
    try:
        frame = load_runs(
            args.experiment,
            sweep_id=args.sweep,
            tracking_uri=args.tracking_uri,
            root=args.root,
            include_sweep_parents=args.include_sweep_parents,
        )
        if args.output is not None:
            path = write_frame(frame, args.output)
            print(f"{len(frame)} runs, {len(frame.columns)} columns written to {path}")
            return 0
        if args.columns:
            print_runs(frame, select_columns(frame, args.columns), fit=False)
        else:
            print_runs(frame, default_columns(frame))
    except RunsError as exc:
        print(f"heta-eval-runs: {exc}", file=sys.stderr)
        return 2
    return 0


def _print_suite(args: argparse.Namespace) -> int:

    try:
        table, parent = load_suite(
            args.suite or None,
            experiment=args.experiment,
            tracking_uri=args.tracking_uri,
            root=args.root,
        )
        if args.output is not None:
            path = write_frame(table_frame(table, parent).reset_index(), args.output)
            print(f"suite table of sweep run {parent} written to {path}")
            return 0
    except (RunsError, SuiteTableError) as exc:
        print(f"heta-eval-runs: {exc}", file=sys.stderr)
        return 2
    print_suite_table(table)
    print(f"sweep parent run: {parent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
