"""`heta-eval-sync`: replay run directories into MLflow (`tracking.sync`)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from heta_eval.redaction import mask_url_credentials
from heta_eval.sweep.end import summarise_sweep
from heta_eval.tracking.sync import sync


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point of `heta-eval-sync`; exit 0 when nothing failed to replay."""
    parser = argparse.ArgumentParser(
        prog="heta-eval-sync",
        description="Replay run directories into MLflow: those whose tracking failed, or, "
        "with --uri, every tracked run and sweep under the root (into another store).",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path("outputs"),
        help="paths.root of the runs (default: ./outputs); its run and sweep directories "
        "are searched for tracking.json",
    )
    parser.add_argument(
        "--uri",
        default=None,
        help="tracking URI to replay into (default: the one each run used; given: every "
        "tracked run directory is replayed there)",
    )
    parser.add_argument(
        "--http-max-retries",
        type=int,
        default=None,
        help="retries of each MLflow request (default: $MLFLOW_HTTP_REQUEST_MAX_RETRIES or 2)",
    )
    parser.add_argument(
        "--http-timeout",
        type=int,
        default=None,
        help="seconds per MLflow request (default: $MLFLOW_HTTP_REQUEST_TIMEOUT or 10)",
    )
    args = parser.parse_args(argv)
    # MLflow's own defaults retry a dead server for minutes; bound them unless told.
    for value, variable, default in (
        (args.http_max_retries, "MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2"),
        (args.http_timeout, "MLFLOW_HTTP_REQUEST_TIMEOUT", "10"),
        (None, "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1"),
    ):
        if value is not None:
            os.environ[variable] = str(value)
        else:
            os.environ.setdefault(variable, default)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)
    results, waiting = sync(args.root.expanduser().resolve(), summarise_sweep, args.uri)
    failed = [r for r in results if r.error]
    for result in results:
        if result.error:
            print(
                f"{result.directory}: NOT replayed ({mask_url_credentials(result.error)}); "
                "run again later"
            )
        else:
            what = ", ".join(result.uploaded) or "nothing new"
            print(f"{result.directory} -> run {result.run_id}: {what}")
    for directory in waiting:
        print(
            f"{directory}: its run has not ended (still running, or interrupted: rerun the "
            "evaluation to finish it)"
        )
    synced = len(results) - len(failed)
    print(f"synced {synced} run(s), {len(failed)} failed, {len(waiting)} waiting")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
