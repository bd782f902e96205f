"""`heta-eval-export-predictions`: a run's recorded rankings and answers as a predictions
file (JSON Lines) that `recipe=replay recipe.predictions=FILE` scores again.

It never replaces a file of a run directory (`-o RUN/report.json` would put JSON Lines where
the run's report was), and an existing file elsewhere only with `--force`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heta_eval.compare.loading import CompareError, load_reports
from heta_eval.kb.replay.export import export_predictions

PROG = "heta-eval-export-predictions"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Write a run's answers and rankings (one query mode) as predictions JSON "
        "Lines, one case a line, for `heta-eval recipe=replay recipe.predictions=FILE`.",
    )
    parser.add_argument(
        "run", metavar="RUN", help="a report.json, a run directory holding one, or an MLflow run id"
    )
    parser.add_argument("-o", "--out", type=Path, required=True, help="the file to write")
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace --out if it exists (never a file of a run directory)",
    )
    parser.add_argument(
        "--mode", help="the query mode to export (default: the run's primary query mode)"
    )
    parser.add_argument(
        "--tracking-uri",
        help="MLflow tracking URI for a run id (default: $MLFLOW_TRACKING_URI, else "
        "sqlite:///<cwd>/outputs/mlflow.db)",
    )
    return parser


# Files only a run writes: a directory holding one is a run directory (or a run's state).
RUN_FILES = ("report.json", "tracking.json", "done.json", ".hydra")


def run_directory_of(path: Path) -> Path | None:
    """The run directory `path` lies in (itself or an ancestor holding a run's files)."""
    for directory in path.resolve().parents:
        if any((directory / name).exists() for name in RUN_FILES):
            return directory
    return None


def refused_output(out: Path, force: bool) -> str | None:
    """Why `out` may not be written, or None: an existing file of a run directory never is,
    another existing file only with `force`."""
    if not out.exists():
        return None
    run_dir = run_directory_of(out)
    if run_dir is not None:
        return (
            f"{out} is a file of the run directory {run_dir}; a run directory keeps what its "
            "run wrote: write the predictions elsewhere"
        )
    if out.is_dir():
        return f"{out} is a directory; -o names the file to write"
    if not force:
        return f"{out} exists; give --force to replace it"
    return None


def main(argv: list[str] | None = None) -> None:
    """Export one run's predictions; exit 1 with a message when the run cannot be read."""
    args = _parser().parse_args(argv)
    refused = refused_output(args.out, args.force)
    if refused is not None:
        print(f"{PROG}: {refused}", file=sys.stderr)
        sys.exit(2)
    try:
        runs = load_reports([args.run], args.tracking_uri)
        if len(runs) != 1:
            raise CompareError(f"{args.run} names {len(runs)} runs (a sweep); name one run")
        counts = export_predictions(runs[0].report, args.out, args.mode)
    except (CompareError, ValueError, OSError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        sys.exit(1)
    print(f"{counts.written} predictions of query mode {counts.mode!r} written to {args.out}")
    if counts.left_out:
        shown = ", ".join(counts.left_out[:10])
        print(
            f"{len(counts.left_out)} case(s) left out, their query failed (a replay names "
            f"them as not covered): {shown}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
