"""Whole processes on SciFact: `heta-eval` against the floor, interpreter start included.

Usage: python benchmarks/whole_process.py [--rounds 5 | --quick] [--tree DIR ...]
       [--data DIR] [--json PATH]

Each round starts, one after the other, fresh processes and takes the wall time from start
to exit: the floor (`python benchmarks/floor.py`: bm25s + pytrec_eval, no harness), then for
each checkout of heta_eval two `heta-eval` runs of the bm25 recipe on BEIR SciFact
(`python -m heta_eval benchmark=beir benchmark.data_root=DIR runner.progress=off
paths.root=ROOT`, what the `heta-eval` console script runs):
- fresh root: a new `paths.root` every round, as the first run of a sweep (it creates the
  MLflow SQLite store, the object store with every document, and the build cache);
- warm root: one root per checkout, filled by an untimed run before the first round, with
  `runner.resume=false runner.cache=off`, as a sweep's later runs (the MLflow store and the
  documents exist; the evaluation is done again, nothing is reused);
- warm root, untracked: the same with `tracking=none`, the harness without MLflow.
Each process's CPU seconds (user + system) are those of its whole process tree (its workers
are waited for, so their CPU counts).
Every run must exit 0 and its report.json (the `report: PATH` line) must hold nDCG@10; the
floor's nDCG@10 comes from its JSON. A failed run is shown with its output and left out of
the medians (the script then exits 1); a checkout whose untimed first run fails is not timed.
Medians, min and max over the rounds are printed with the ratio to the floor's median.

The current checkout (this repository) is always timed; each `--tree DIR` (another checkout
or worktree of heta_eval) is timed beside it in the same rounds, its processes run with
`PYTHONPATH=DIR` and DIR as the working directory, so that its package is imported instead
of the editable install's (checked before the first round). Rows are labelled by
`git rev-parse --short HEAD`, with `+dirty` when the checkout has changes. The order of the
checkouts rotates from round to round. Temporary roots live under $TMPDIR (removed at
exit); the table goes to stdout and to benchmarks/results/whole_process.json (or --json).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, RESULTS, SCIFACT, print_table, scratch_dir, write_json
from run_all import disk_probe, machine

# The warm root's overrides; "untracked" also leaves MLflow out (`tracking=none`), which
# separates the harness's own cost from tracking's.
WARM = ("runner.resume=false", "runner.cache=off")
VARIANTS = ("fresh root", "warm root", "warm root, untracked")
COLUMNS = [
    "process",
    "ok",
    "median_s",
    "min_s",
    "max_s",
    "floor_median_s",
    "ratio",
    "cpu_median_s",
    "cpu_ratio",
    "ndcg@10",
]


@dataclass
class Tree:
    """A checkout of heta_eval whose `heta-eval` processes are timed."""

    path: Path
    label: str
    package: str = ""
    warm_root: Path = field(default_factory=Path)
    error: str | None = None


@dataclass
class Outcome:
    """One timed process: wall seconds, nDCG@10, and what went wrong if it failed."""

    seconds: float
    ndcg: float | None
    error: str | None = None
    cpu: float | None = None  # user + system seconds of the process tree


def git_label(path: Path) -> str:
    """`git rev-parse --short HEAD` of `path`, with `+dirty` when it has changes."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    dirty = git("status", "--porcelain")
    return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")


def tree_env(tree: Tree) -> dict[str, str]:
    """The environment of a tree's processes: its directory first on PYTHONPATH."""
    paths = [str(tree.path), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def imported_package(tree: Tree) -> str:
    """Where `import heta_eval` finds the package in the tree's processes."""
    done = subprocess.run(
        [sys.executable, "-c", "import heta_eval; print(heta_eval.__file__)"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tree.path,
        env=tree_env(tree),
    )
    if done.returncode != 0:
        raise SystemExit(f"{tree.path}: import heta_eval failed:\n{done.stderr}")
    package = Path(done.stdout.strip()).resolve().parent
    if not package.is_relative_to(tree.path):
        raise SystemExit(f"{tree.path}: heta_eval is imported from {package}, not the tree")
    return str(package)


def tail(text: str, lines: int = 15) -> str:
    """The last `lines` lines of a process's output."""
    return "\n".join(text.strip().splitlines()[-lines:])


def children_cpu() -> float:
    """User + system seconds of this process's waited-for descendants so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_process(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[Any, float, float]:
    """(the finished process, wall seconds from its start to its exit, CPU seconds of its
    process tree)."""
    cpu = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, check=False)
    return done, time.perf_counter() - started, children_cpu() - cpu


def run_floor(data: Path, out: Path) -> Outcome:
    """One whole floor process; its nDCG@10 from the JSON it writes."""
    command = [sys.executable, str(REPO / "benchmarks" / "floor.py"), "--data", str(data)]
    done, seconds, cpu = timed_process([*command, "--json", str(out)], REPO, dict(os.environ))
    if done.returncode != 0 or not out.is_file():
        return Outcome(seconds, None, f"exit {done.returncode}\n{tail(done.stdout + done.stderr)}")
    row = json.loads(out.read_text(encoding="utf-8"))
    out.unlink()
    return Outcome(seconds, row["ndcg@10"], cpu=cpu)


def report_ndcg(stdout: str, root: Path) -> float | None:
    """nDCG@10 of the run's report.json (the `report:` line, else the newest under `root`)."""
    paths = [Path(line[len("report:") :].strip()) for line in stdout.splitlines()]
    paths = [p for p in paths if p.name == "report.json" and p.is_file()]
    found = paths or sorted(root.glob("runs/**/report.json"), key=lambda p: p.stat().st_mtime)
    if not found:
        return None
    report = json.loads(found[-1].read_text(encoding="utf-8"))
    summary = report["score_summary"]
    keys = [f"{mode}.ndcg@10" for mode in report.get("query_modes", [])] + ["ndcg@10"]
    return next((summary[k] for k in keys if k in summary), None)


def run_heta_eval(tree: Tree, data: Path, root: Path, *overrides: str) -> Outcome:
    """One whole `heta-eval` SciFact process of `tree` with everything under `root`."""
    command = [
        sys.executable,
        "-m",
        "heta_eval",
        "benchmark=beir",
        f"benchmark.data_root={data}",
        f"paths.root={root}",
        "runner.progress=off",
        *overrides,
    ]
    done, seconds, cpu = timed_process(command, tree.path, tree_env(tree))
    output = done.stdout + done.stderr
    if done.returncode != 0:
        return Outcome(seconds, None, f"exit {done.returncode}\n{tail(output)}")
    ndcg = report_ndcg(done.stdout, root)
    if ndcg is None:
        return Outcome(seconds, None, f"exit 0 but no nDCG@10 in a report.json\n{tail(output)}")
    return Outcome(seconds, ndcg, cpu=cpu)


def summarise(
    name: str,
    outcomes: list[Outcome],
    floor_median: float | None,
    floor_cpu: float | None = None,
) -> dict[str, Any]:
    """A table row: median, min and max of the successful runs, and the ratio to the floor;
    the median CPU seconds of the process tree."""
    good = [o for o in outcomes if o.error is None]
    times = [o.seconds for o in good]
    ndcgs = sorted({round(o.ndcg, 4) for o in good if o.ndcg is not None})
    row: dict[str, Any] = {"process": name, "ok": f"{len(good)}/{len(outcomes)}"}
    if times:
        median = statistics.median(times)
        row |= {"median_s": median, "min_s": min(times), "max_s": max(times)}
        if floor_median:
            row |= {"floor_median_s": floor_median, "ratio": median / floor_median}
    cpus = [o.cpu for o in good if o.cpu is not None]
    if cpus:
        row["cpu_median_s"] = statistics.median(cpus)
        if floor_cpu:
            row["cpu_ratio"] = row["cpu_median_s"] / floor_cpu
    row["ndcg@10"] = " / ".join(f"{v:.4f}" for v in ndcgs) or "-"
    row["seconds"] = [round(o.seconds, 3) for o in outcomes]
    row["cpu_seconds"] = [None if o.cpu is None else round(o.cpu, 3) for o in outcomes]
    row["errors"] = [o.error for o in outcomes if o.error]
    return row


def cell(outcome: Outcome) -> str:
    """`1.23 s (nDCG@10 0.6855)` or `FAILED after 1.23 s`."""
    if outcome.error:
        return f"FAILED after {outcome.seconds:.2f} s"
    cpu = f", {outcome.cpu:.2f} s CPU" if outcome.cpu is not None else ""
    return f"{outcome.seconds:.2f} s{cpu} (nDCG@10 {outcome.ndcg:.4f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument(
        "--tree", type=Path, action="append", default=[], help="another checkout (repeatable)"
    )
    parser.add_argument("--data", type=Path, default=SCIFACT, help="a BEIR-layout directory")
    parser.add_argument("--json", type=Path, default=RESULTS / "whole_process.json")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    if not (args.data / "corpus.jsonl").is_file():
        parser.error(f"no corpus.jsonl in {args.data}")
    data = args.data.resolve()
    paths = [REPO]
    for path in (p.resolve() for p in args.tree):
        if not (path / "heta_eval").is_dir():
            parser.error(f"{path}: not a checkout of heta_eval (no heta_eval/)")
        if path not in paths:
            paths.append(path)
    trees = [Tree(path, git_label(path)) for path in paths]
    for tree in trees:
        if [t.label for t in trees].count(tree.label) > 1:
            tree.label = f"{tree.label} ({tree.path})"
    started = time.perf_counter()
    info = machine()
    info["disk_probe_at_start_s"] = round(disk_probe(), 3)
    print(f"machine: {info}", flush=True)
    tmp = scratch_dir("whole-process-")
    for n, tree in enumerate(trees):
        tree.package = imported_package(tree)
        tree.warm_root = tmp / f"warm-{n}"
        print(f"{tree.label}: heta_eval from {tree.package}; filling its warm root", flush=True)
        warmed = run_heta_eval(tree, data, tree.warm_root)
        if warmed.error:
            tree.error = warmed.error
            print(f"  not timed: its untimed first run failed: {warmed.error}", flush=True)
    failed_trees = [t for t in trees if t.error]
    trees = [t for t in trees if not t.error]

    floor_runs: list[Outcome] = []
    runs: dict[tuple[str, str], list[Outcome]] = {(t.label, v): [] for t in trees for v in VARIANTS}
    for i in range(rounds):
        out = tmp / f"floor-{i}.json"
        floor_runs.append(run_floor(data, out))
        line = [f"round {i + 1}/{rounds}: floor {cell(floor_runs[-1])}"]
        shift = i % max(len(trees), 1)
        for tree in trees[shift:] + trees[:shift]:
            fresh = tmp / f"fresh-{i}"
            outcome = run_heta_eval(tree, data, fresh)
            shutil.rmtree(fresh, ignore_errors=True)
            runs[(tree.label, "fresh root")].append(outcome)
            warm = run_heta_eval(tree, data, tree.warm_root, *WARM)
            runs[(tree.label, "warm root")].append(warm)
            untracked = run_heta_eval(tree, data, tree.warm_root, *WARM, "tracking=none")
            runs[(tree.label, "warm root, untracked")].append(untracked)
            line.append(
                f"{tree.label} fresh {cell(outcome)}, warm {cell(warm)}, "
                f"untracked {cell(untracked)}"
            )
        print(" · ".join(line), flush=True)
        for outcome in [floor_runs[-1], *(r[-1] for r in runs.values())]:
            if outcome.error:
                print(f"  failed: {outcome.error}", flush=True)

    info["load_average_at_end"] = os.getloadavg()[0]
    info["disk_probe_at_end_s"] = round(disk_probe(), 3)
    floor_row = summarise("floor (floor.py)", floor_runs, None)
    floor_median = floor_row.get("median_s")
    floor_cpu = floor_row.get("cpu_median_s")
    rows = [floor_row]
    rows += [
        summarise(f"heta-eval {label}, {variant}", outcomes, floor_median, floor_cpu)
        for (label, variant), outcomes in runs.items()
    ]
    elapsed = time.perf_counter() - started
    print(f"\nwhole processes on {data.name}, seconds (median of {rounds} interleaved rounds)")
    print_table(rows, COLUMNS)
    print(f"\n{info}; {elapsed:.0f} s in all")
    write_json(
        args.json,
        {
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "rounds": rounds,
            "data": str(data),
            "machine": info,
            "seconds": elapsed,
            "trees": [
                {"label": t.label, "path": str(t.path), "package": t.package, "error": t.error}
                for t in trees + failed_trees
            ],
            "rows": rows,
        },
    )
    print(f"written {args.json}")
    for tree in failed_trees:
        print(f"not timed: {tree.label} ({tree.path}): its first run failed (see above)")
    if failed_trees or any(row["errors"] for row in rows):
        raise SystemExit("some runs failed (see above); their times are not in the medians")


if __name__ == "__main__":
    main()
