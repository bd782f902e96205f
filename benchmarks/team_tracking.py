"""A parallel sweep tracked on an MLflow server on PostgreSQL against the same sweep on SQLite.

Usage: python benchmarks/team_tracking.py [--repeat 1] [--jobs 4] [--json PATH]

Starts a real PostgreSQL (Debian's binaries, as an unprivileged user when run as root) and
`mlflow server` on it, on loopback (tests/team_servers.py), then times the sweep
`heta-eval -m hydra/launcher=local_parallel hydra.launcher.n_jobs=4
recipe.chunk_size=8,16,32,64 runner.top_k=5,10` (8 jobs on the bundled sample benchmark)
as a whole process, once with `tracking.uri=http://...` and once with the default SQLite
store, each in a fresh `paths.root`, alternating for `--repeat` rounds. Prints the wall
seconds of each (median) and writes them as JSON with `--json`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, median_rows, print_table, write_json

sys.path.insert(0, str(REPO))

from tests.team_servers import mlflow_server, postgres_missing, postgres_server

SWEEP = ["recipe.chunk_size=8,16,32,64", "runner.top_k=5,10"]


def user_env() -> dict[str, str]:
    """This environment without MLflow's settings (a user's shell)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}


def sweep_seconds(root: Path, jobs: int, tracking: list[str]) -> float:
    """Wall seconds of the sweep as one `python -m heta_eval -m ...` process."""
    command = [
        sys.executable,
        "-m",
        "heta_eval",
        "-m",
        f"paths.root={root}",
        "hydra/launcher=local_parallel",
        f"hydra.launcher.n_jobs={jobs}",
        "runner.progress=off",
        *tracking,
        *SWEEP,
    ]
    root.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=user_env(), cwd=root.parent)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=4, help="parallel sweep workers")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    missing = postgres_missing()
    if missing:
        parser.error(missing)
    rows = []
    with tempfile.TemporaryDirectory(prefix="team-tracking-") as scratch:
        base = Path(scratch)
        env = {**user_env(), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with postgres_server() as database, mlflow_server(database, base / "artifacts", env) as url:
            for n in range(args.repeat):
                server = sweep_seconds(
                    base / f"pg{n}" / "outputs",
                    args.jobs,
                    [f"tracking.uri={url}", f"tracking.experiment=round{n}"],
                )
                sqlite = sweep_seconds(base / f"sqlite{n}" / "outputs", args.jobs, [])
                print(f"round {n + 1}: postgresql+server {server:.1f}s, sqlite {sqlite:.1f}s")
                rows.append(
                    {
                        "jobs": 8,
                        "workers": args.jobs,
                        "postgresql_server_s": server,
                        "sqlite_s": sqlite,
                    }
                )
    result = median_rows(rows)
    print_table([result], list(result))
    write_json(args.json, {"repeat": args.repeat, "median": result, "rounds": rows})


if __name__ == "__main__":
    main()
