"""`heta-eval-compare`: compare runs case by case against a baseline (or every pair), with
paired tests."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from rich.console import Console

from heta_eval.compare.loading import (
    REPORT_FILE,
    CompareError,
    LoadedRun,
    default_tracking_uri,
    load_reports,
)
from heta_eval.compare.paired import DEFAULT_MIN_OVERLAP, compare_reports
from heta_eval.compare.render import rich_table, write_outputs
from heta_eval.compare.suite_render import rich_suite, write_suite_outputs
from heta_eval.compare.suites import compare_suites, is_suite_comparison

PROG = "heta-eval-compare"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Compare evaluation runs with a baseline (or every pair): cases paired on "
        "(unit, case), each run under its primary query mode; means and paired differences "
        "with bootstrap CIs, McNemar / randomization tests with Holm's correction, "
        "wins/losses/ties. Writes comparison.md, comparison.html and comparison.json.",
    )
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a report.json, a run directory holding one, or an MLflow run id "
        "(a sweep's parent run stands for its child runs)",
    )
    parser.add_argument(
        "--baseline",
        help="the run the others are compared with: an override one run has (recipe=bm25), "
        "its label, MLflow run id or report path, or its position (0 = the first, the default)",
    )
    parser.add_argument(
        "--all-pairs",
        action="store_true",
        help="test every pair of runs instead of each run against the baseline",
    )
    parser.add_argument(
        "--min-overlap",
        type=float,
        default=DEFAULT_MIN_OVERLAP,
        help="cases of one run only are left out and reported; refuse when the cases every "
        f"run has are fewer than this share of a run's cases (default {DEFAULT_MIN_OVERLAP})",
    )
    parser.add_argument(
        "--allow-different-data",
        action="store_true",
        help="compare runs evaluated on different data (their data digests differ); every "
        "output then says so",
    )
    parser.add_argument(
        "--tracking-uri",
        help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else "
        "sqlite:///<cwd>/outputs/mlflow.db)",
    )
    parser.add_argument(
        "--metrics",
        help="comma-separated metrics: ndcg@10 (each run under its primary query mode, the "
        "default for every metric all runs share), bm25.ndcg@10 (every run under mode bm25), "
        "or one mode per run in the runs' order, bm25.ndcg@10:fusion.ndcg@10",
    )
    parser.add_argument(
        "--out", type=Path, help="output directory (default: outputs/comparisons/<timestamp>)"
    )
    parser.add_argument("--resamples", type=int, default=10_000, help="sign flips and bootstrap")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (Holm)")
    parser.add_argument(
        "--log-to-mlflow",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="log the outputs as artifacts of the sweep's parent run (default: on when the "
        "runs came from a sweep)",
    )
    return parser


def _baseline(value: str | None, all_pairs: bool) -> int | str | None:
    if all_pairs:
        if value is not None:
            raise CompareError("--all-pairs tests every pair; it takes no --baseline")
        return None
    if value is None:
        return 0
    if value.isdigit():
        return int(value)
    path = Path(value).expanduser()
    if path.is_dir():
        path = path / REPORT_FILE
    return str(path.resolve()) if path.is_file() else value


def _default_out() -> Path:
    base = Path("outputs") / "comparisons" / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    out, n = base, 1
    while out.exists():
        out, n = base.with_name(f"{base.name}-{n}"), n + 1
    return out


def _log_to_sweeps(runs: list[LoadedRun], paths: dict[str, Path], uri: str | None) -> list[str]:
    from mlflow import MlflowClient

    sweeps = {r.sweep_run_id: r.tracking_uri for r in runs if r.sweep_run_id}
    for sweep, found_in in sweeps.items():
        # The store the sweep's runs were read from (found among the known stores if need be).
        client = MlflowClient(tracking_uri=uri or found_in or default_tracking_uri())
        try:
            for path in paths.values():
                client.log_artifact(sweep, str(path))
        except Exception as exc:  # the outputs are written; say why MLflow did not get them
            raise CompareError(f"could not log to MLflow run {sweep}: {exc}") from None
    return list(sweeps)


def run(args: argparse.Namespace, console: Console) -> int:
    """Load, compare, print and write; raises CompareError for anything the user must fix."""
    if args.resamples < 1:
        raise CompareError(f"--resamples must be >= 1, got {args.resamples}")
    if not 0 <= args.min_overlap <= 1:
        raise CompareError(f"--min-overlap must be within [0, 1], got {args.min_overlap}")
    baseline = _baseline(args.baseline, args.all_pairs)
    metrics = None
    if args.metrics is not None:
        metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
        if not metrics:
            raise CompareError("--metrics names no metric")
    runs = load_reports(args.runs, tracking_uri=args.tracking_uri)

    if is_suite_comparison(runs):
        return _run_suite(args, runs, baseline, metrics, console)
    comparison = compare_reports(
        runs,
        baseline=baseline,
        metrics=metrics,
        **_statistics(args),
    )
    console.print(rich_table(comparison))
    paths = write_outputs(comparison, (args.out or _default_out()).resolve())
    for kind, path in paths.items():
        console.print(f"{kind}: {path}", soft_wrap=True, markup=False)
    from_sweep = any(r.sweep_run_id for r in runs)
    if args.log_to_mlflow and not from_sweep:
        print(f"{PROG}: no sweep parent run among the runs; nothing logged", file=sys.stderr)
    elif from_sweep and args.log_to_mlflow is not False:
        for sweep in _log_to_sweeps(runs, paths, args.tracking_uri):
            console.print(f"logged to MLflow sweep run {sweep}", soft_wrap=True)
    return 0


def _statistics(args: argparse.Namespace) -> dict[str, object]:
    """The options every comparison takes from the command line."""
    return {
        "min_overlap": args.min_overlap,
        "resamples": args.resamples,
        "seed": args.seed,
        "alpha": args.alpha,
        "allow_different_data": args.allow_different_data,
    }


def _run_suite(
    args: argparse.Namespace,
    runs: list[LoadedRun],
    baseline: int | str | None,
    metrics: list[str] | None,
    console: Console,
) -> int:
    """Suite sweeps: compare per member, then the macro average (compare.suites)."""

    comparison = compare_suites(
        runs,
        baseline=baseline,
        metrics=metrics,
        **_statistics(args),
    )
    console.print(rich_suite(comparison))
    out = (args.out or _default_out()).resolve()
    paths = write_suite_outputs(comparison, out)
    console.print(f"outputs: {out} (suite_comparison.md, one directory per member)", soft_wrap=True)
    if args.log_to_mlflow is not False:
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=args.tracking_uri or default_tracking_uri())
        for sweep in dict.fromkeys(r.sweep_run_id for r in runs if r.sweep_run_id):
            try:
                for path in paths.values():
                    rel = path.parent.relative_to(out)
                    where = "suite_comparison" + ("" if str(rel) == "." else f"/{rel}")
                    client.log_artifact(sweep, str(path), artifact_path=where)
            except Exception as exc:
                raise CompareError(f"could not log to MLflow run {sweep}: {exc}") from None
            console.print(f"logged to MLflow sweep run {sweep}", soft_wrap=True)
    return 0


def main(argv: list[str] | None = None) -> None:
    """Entry point of `heta-eval-compare`."""
    args = _parser().parse_args(argv)
    console = Console()
    if not console.is_terminal:
        # Piped: $COLUMNS, else 120 (the tables are made to fit 120 columns).
        import os

        console = Console(width=int(os.environ.get("COLUMNS") or 120))
    try:
        code = run(args, console)
    except CompareError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
