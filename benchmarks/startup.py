"""Whole-process timings of the CLI: `--help`, a run on the sample benchmark, SciFact.

Usage: python benchmarks/startup.py [--repeat 5] [--scifact] [--json PATH]

Each measurement starts `python -m heta_eval ...` (what the `heta-eval` console script
runs) as a fresh process and takes the wall time to its exit, interpreter start
included; the median of `--repeat` runs is reported, with `python -c pass` for
reference. The sample run (bundled benchmark, bm25 recipe, MLflow into a local SQLite
store) is timed twice: in a fresh `paths.root` (creating the MLflow store, as the first
run of a sweep does) and again in the same root with `runner.resume=false` (the other
runs of a sweep). With `--scifact`, the same is done once for SciFact with the build
cache off (the whole CLI over the runner measured by stage_timings.py).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import SCIFACT, print_table, scratch_dir, write_json


def wall(args: list[str]) -> float:
    """Seconds from start to exit of `python -m heta_eval args...` (must succeed)."""
    command = [sys.executable, *args]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return seconds


def cli_run(root: Path, *overrides: str) -> float:
    """One CLI evaluation with everything under `root`."""
    return wall(["-m", "heta_eval", f"paths.root={root}", "hydra.job.chdir=false", *overrides])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scifact", action="store_true", help="also time a SciFact CLI run")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    tmp = scratch_dir("startup-")
    runs: dict[str, list[float]] = {"python -c pass": [], "heta-eval --help": []}
    runs |= {"sample run, fresh root": [], "sample run, same root": []}
    for i in range(args.repeat):
        runs["python -c pass"].append(wall(["-c", "pass"]))
        runs["heta-eval --help"].append(wall(["-m", "heta_eval", "--help"]))
        root = tmp / f"sample-{i}"
        runs["sample run, fresh root"].append(cli_run(root))
        runs["sample run, same root"].append(cli_run(root, "runner.resume=false"))
    if args.scifact:
        scifact = [
            "benchmark=beir",
            f"benchmark.data_root={SCIFACT}",
            "runner.cache=off",
            "runner.offline=true",
        ]
        root = tmp / "scifact"
        runs["scifact run, fresh root"] = [cli_run(root, *scifact)]
        runs["scifact run, same root"] = [cli_run(root, *scifact, "runner.resume=false")]
    rows = [
        {"process": name, "median_s": statistics.median(v), "min_s": min(v), "runs": len(v)}
        for name, v in runs.items()
    ]
    print_table(rows, ["process", "median_s", "min_s", "runs"])
    write_json(args.json, {row["process"]: row for row in rows})


if __name__ == "__main__":
    main()
