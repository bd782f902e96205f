"""A SciFact sweep against one cold single run, whole processes: what a sweep's jobs cost
beyond their evaluation.

Usage: python benchmarks/sweep_overhead.py [--rounds 3] [--tree DIR ...] [--data DIR]
       [--json PATH]

Each round starts, one after the other (the order alternating from round to round), for
each checkout of heta_eval:
- a cold single run: `python -m heta_eval benchmark=beir benchmark.data_root=DIR
  runner.progress=off paths.root=ROOT` with a new ROOT (it creates the MLflow store, the
  object store with every document and the build cache);
- a 4-job sweep, `-m ... runner.top_k=5,10,20,50` with a new ROOT too (its first job is as
  cold as the single run; the later ones find the documents and the knowledge base built).
Wall time from start to exit. Every process must exit 0 and leave one report.json per job.
From the reports' own timestamps (`started_at`, `finished_at`: the evaluation, from the
documents' write to the scores), per sweep: the evaluation of each job, the time between one
job's evaluation and the next one's (what a job costs beyond its evaluation: Hydra's job
set-up, composing and checking its configuration, loading the benchmark, writing, logging
and ending the previous run), the sweep's start (process start to the first evaluation) and
its end (the last evaluation to the process's exit: the last run's files, waiting for
everything handed over, the parent's summary). Medians over the rounds; the ratio of the
sweep to the single run. Load averages are printed before and after each round.

The current checkout is always timed; each `--tree DIR` (another checkout of heta_eval) is
timed in the same rounds with `PYTHONPATH=DIR` and DIR as the working directory. Results go
to benchmarks/results/sweep_overhead.json (or --json).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, RESULTS, SCIFACT, scratch_dir, write_json

TOP_K = "5,10,20,50"


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def env_for(tree: Path) -> dict[str, str]:
    """The environment of a checkout's processes: its directory first on PYTHONPATH."""
    paths = [str(tree), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def run(tree: Path, data: Path, root: Path, sweep: bool) -> tuple[float, float]:
    """(wall seconds, start time since the epoch) of one whole process (the sweep with
    `sweep`); exits the script with the output when the process fails."""
    command = [sys.executable, "-m", "heta_eval", *(["-m"] if sweep else [])]
    command += [
        "benchmark=beir",
        f"benchmark.data_root={data}",
        f"paths.root={root}",
        "runner.progress=off",
        *([f"runner.top_k={TOP_K}"] if sweep else []),
    ]
    began = time.time()
    started = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=tree, env=env_for(tree), check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip().splitlines()[-30:]
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n" + "\n".join(output))
    return seconds, began


def job_reports(root: Path) -> list[dict[str, Any]]:
    """The sweep's reports, by job number."""
    found = sorted(root.glob("multiruns/*/*/*/report.json"), key=lambda p: int(p.parent.name))
    return [json.loads(p.read_text(encoding="utf-8")) for p in found]


def stamp(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def sweep_parts(root: Path, began: float, seconds: float, jobs: int) -> dict[str, Any]:
    """Evaluation and in-between seconds of a sweep from its reports' timestamps."""
    reports = job_reports(root)
    if len(reports) != jobs:
        raise SystemExit(f"{root}: {len(reports)} report.json files, expected {jobs}")
    spans = [(stamp(r["started_at"]), stamp(r["finished_at"])) for r in reports]
    return {
        "evaluation_s": [end - start for start, end in spans],
        "between_s": [spans[i][0] - spans[i - 1][1] for i in range(1, len(spans))],
        "start_s": spans[0][0] - began,
        "end_s": began + seconds - spans[-1][1],
        "ndcg@10": [r["score_summary"].get("bm25.ndcg@10") for r in reports],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", type=Path, action="append", default=[])
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--json", type=Path, default=RESULTS / "sweep_overhead.json")
    args = parser.parse_args()
    trees = [REPO, *(t.resolve() for t in args.tree)]
    jobs = len(TOP_K.split(","))
    scratch = scratch_dir("sweep-overhead-")
    results: dict[str, dict[str, list[Any]]] = {
        str(t): {"single": [], "sweep": [], "parts": []} for t in trees
    }
    loads = []
    try:
        for number in range(args.rounds):
            before = loadavg()
            for tree in trees if number % 2 == 0 else trees[::-1]:
                kinds = ("single", "sweep") if number % 2 == 0 else ("sweep", "single")
                for kind in kinds:
                    root = scratch / f"{kind}-{number}-{trees.index(tree)}"
                    seconds, began = run(tree, args.data, root, sweep=kind == "sweep")
                    if kind == "single":
                        results[str(tree)]["single"].append(seconds)
                    else:
                        results[str(tree)]["sweep"].append(seconds)
                        results[str(tree)]["parts"].append(sweep_parts(root, began, seconds, jobs))
                    shutil.rmtree(root, ignore_errors=True)
            loads.append((before, loadavg()))
            print(f"round {number + 1}: load average {before} -> {loads[-1][1]}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary: dict[str, Any] = {"rounds": args.rounds, "load_average": loads, "trees": {}}
    for tree in trees:
        found = results[str(tree)]
        single = statistics.median(found["single"])
        sweep = statistics.median(found["sweep"])
        parts = found["parts"]
        between = statistics.median(b for p in parts for b in p["between_s"])
        evaluation = statistics.median(e for p in parts for e in p["evaluation_s"][1:])
        first = statistics.median(p["evaluation_s"][0] for p in parts)
        start = statistics.median(p["start_s"] for p in parts)
        end = statistics.median(p["end_s"] for p in parts)
        row = {
            "single_s": single,
            "sweep_s": sweep,
            "ratio": sweep / single,
            "sweep_start_s": start,
            "first_evaluation_s": first,
            "later_evaluation_s": evaluation,
            "between_jobs_s": between,
            "sweep_end_s": end,
            "single_all_s": found["single"],
            "sweep_all_s": found["sweep"],
            "parts": parts,
        }
        summary["trees"][str(tree)] = row
        print(f"\n{tree}")
        print(f"  one cold single run        {single:6.2f} s  (rounds: {_list(found['single'])})")
        print(
            f"  {jobs}-job sweep (top_k={TOP_K}) {sweep:6.2f} s  (rounds: {_list(found['sweep'])})"
        )
        print(f"  sweep / single             {sweep / single:6.2f}x  (target <= 1.6x)")
        print(f"  sweep start -> 1st eval    {start:6.2f} s")
        print(f"  1st job's evaluation       {first:6.2f} s (cold)")
        print(f"  later jobs' evaluation     {evaluation:6.2f} s (median)")
        print(
            f"  per job beyond evaluation  {between:6.2f} s (median gap between evaluations;"
            " target <= 0.5 s)"
        )
        print(f"  last eval -> exit          {end:6.2f} s")
    write_json(args.json, summary)
    return 0


def _list(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


if __name__ == "__main__":
    raise SystemExit(main())
