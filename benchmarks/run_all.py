"""Run every performance measurement, side by side, and check the targets.

Usage: python benchmarks/run_all.py [--quick] [--repeat N] [--peer-queries N]

Each measurement runs in its own process (the scripts next to this one), all in this one
invocation, so that compared numbers share the machine's state:
1. SciFact, interleaved `--repeat` times: the floor (floor.py: bm25s + pytrec_eval, no
   harness), the runner with a fresh object store (first run: every document written),
   the runner with the store of the previous run (a sweep's later runs: documents
   compared, not written), and the runner set up as Heta's recipe retrieves (1,024-
   character chunks, 50 overlap, no stemming or stopwords); medians are compared.
2. Whole processes (startup.py): `heta-eval --help`, sample-benchmark runs, SciFact runs.
3. The peer (peer_heta.py): Heta Framework's runner on `--peer-queries` queries,
   extrapolated to the full 300.
4. Scaling (scaling.py) on synthetic corpora.
The machine's record includes a disk probe (5,183 one-directory files, as a fresh SciFact
store) at the start and the end. Prints one table of results and one of the targets with
their ratios, and writes
benchmarks/results/summary.json (summary-quick.json with --quick). Full: 4-8 minutes on
2 cores (quiet-busy); `--quick` (smaller scaling sizes, 5 peer queries, 3 startup
repeats, no SciFact CLI runs): 2-3 minutes.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, median_rows, print_table, run_script, scratch_dir, write_json
from scaling import COLUMNS as SCALING_COLUMNS

# A memory-backed file system for the "in memory" variant (the default temporary directory
# where there is none).
MEMORY_DIR = "/dev/shm" if os.access("/dev/shm", os.W_OK) else os.environ.get("TMPDIR", "/tmp")

SCIFACT_COLUMNS = [
    "measurement",
    "load_s",
    "index_s",
    "write_documents_s",
    "write_in_background_s",
    "build_s",
    "query_s",
    "score_s",
    "report_s",
    "total_s",
    "load_evaluate_s",
    "ndcg@10",
    "peak_rss_mb",
]


def disk_probe(files: int = 5183, size: int = 1500) -> float:
    """Seconds to create `files` small files, one directory each, with atomic writes (what a
    fresh SciFact object store costs the disk), in the temporary directory's file system.

    Virtual disks throttle: the same probe takes 0.4 s on an idle disk and several seconds
    after minutes of heavy writing, so it is taken before and after the suite.
    """
    root = scratch_dir("disk-probe-")
    data = b"x" * size
    started = time.perf_counter()
    for i in range(files):
        directory = root / str(i)
        directory.mkdir()
        tmp = directory / ".doc.tmp"
        tmp.write_bytes(data)
        tmp.replace(directory / "doc.txt")
    seconds = time.perf_counter() - started
    shutil.rmtree(root, ignore_errors=True)
    return seconds


def machine() -> dict[str, Any]:
    """CPU model, cores, memory and load, for the record."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    except (OSError, StopIteration):
        mem_kb = 0
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "load_average_at_start": os.getloadavg()[0],
    }


def scifact(repeat: int) -> dict[str, dict[str, Any]]:
    """Medians of the floor and the runner variants, interleaved run by run."""
    store = scratch_dir("run-all-store-")
    heta_like = ["--chunk-size", "1024", "--chunk-overlap", "50", "--chunk-unit", "chars"]
    heta_like.append("--plain-tokens")
    variants: dict[str, list[str]] = {
        "floor": [],
        "runner, fresh store": ["scifact", "--repeat", "1"],
        # The same with every file in memory: the harness's CPU cost without the disk's.
        "runner, fresh store in memory": ["scifact", "--repeat", "1", "--no-mlflow"],
        "runner, store of the previous run": ["scifact", "--repeat", "1", "--store", str(store)],
        "runner, Heta-like recipe": ["scifact", "--repeat", "1", "--no-mlflow", *heta_like],
    }
    # Fill the shared store once, so every measured run of that variant finds it filled.
    run_script("stage_timings.py", "scifact", "--repeat", "1", "--no-mlflow", "--store", str(store))
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for i in range(repeat):
        print(f"scifact: round {i + 1}/{repeat}", flush=True)
        for name, args in variants.items():
            if name == "floor":
                runs[name].append(run_script("floor.py"))
            else:
                env = {"TMPDIR": MEMORY_DIR} if name.endswith("in memory") else None
                row = run_script("stage_timings.py", *args, env=env)["median"]["scifact"]
                runs[name].append(row)
    shutil.rmtree(store, ignore_errors=True)
    return {name: median_rows(rows) for name, rows in runs.items()}


def targets(
    sci: dict[str, dict[str, Any]],
    startup: dict[str, Any],
    peer: dict[str, Any],
    scaling: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Every target with its measured value, ratio and verdict."""
    floor = sci["floor"]["total_s"]
    cold = sci["runner, fresh store"]["load_evaluate_s"]
    in_memory = sci["runner, fresh store in memory"]["load_evaluate_s"]
    warm = sci["runner, store of the previous run"]["load_evaluate_s"]
    most_cases = max(scaling, key=lambda r: (r["queries"], r["documents"]))
    largest = max(scaling, key=lambda r: (r["documents"], r["queries"]))
    mlflow_share = most_cases["mlflow_log_s"] / most_cases["load_evaluate_s"]
    help_s = startup["heta-eval --help"]["median_s"]
    peer_full = peer["peer_full_run_extrapolated_s"]
    ndcg_gap = peer["heta_eval_heta_like_ndcg@10_subset"] - peer["peer_ndcg@10_subset"]
    ndcg_gap_docs = peer["heta_eval_ndcg@10_subset"] - peer["peer_ndcg@10_subset"]
    heta_like = sci["runner, Heta-like recipe"]["load_evaluate_s"]
    rows = [
        {
            "target": "SciFact runner / floor <= 1.3 (fresh store)",
            "measured": f"{cold:.2f} s / {floor:.2f} s",
            "ratio": cold / floor,
            "met": cold / floor <= 1.3,
        },
        {
            "target": "SciFact runner / floor <= 1.3 (fresh store in memory)",
            "measured": f"{in_memory:.2f} s / {floor:.2f} s",
            "ratio": in_memory / floor,
            "met": in_memory / floor <= 1.3,
        },
        {
            "target": "SciFact runner / floor <= 1.3 (store of previous run)",
            "measured": f"{warm:.2f} s / {floor:.2f} s",
            "ratio": warm / floor,
            "met": warm / floor <= 1.3,
        },
        {
            "target": f"MLflow log of {most_cases['queries']:,} cases < 10% of evaluation",
            "measured": f"{most_cases['mlflow_log_s']:.2f} s of "
            f"{most_cases['load_evaluate_s']:.1f} s",
            "ratio": mlflow_share,
            "met": mlflow_share < 0.10,
        },
        {
            "target": f"MLflow log of {most_cases['queries']:,} cases < 3 s",
            "measured": f"{most_cases['mlflow_log_s']:.2f} s",
            "ratio": most_cases["mlflow_log_s"] / 3,
            "met": most_cases["mlflow_log_s"] < 3,
        },
        {
            "target": "Heta runner (extrapolated) / runner >= 100 (whole documents)",
            "measured": f"{peer_full:.0f} s / {cold:.2f} s",
            "ratio": peer_full / cold,
            "met": peer_full / cold >= 100,
        },
        {
            "target": "Heta runner (extrapolated) / runner >= 100 (Heta-like recipe)",
            "measured": f"{peer_full:.0f} s / {heta_like:.2f} s",
            "ratio": peer_full / heta_like,
            "met": peer_full / heta_like >= 100,
        },
        {
            "target": f"nDCG@10 vs Heta within 0.02 ({peer['queries_run']} queries, Heta-like)",
            "measured": f"{peer['heta_eval_heta_like_ndcg@10_subset']:.3f} vs "
            f"{peer['peer_ndcg@10_subset']:.3f}",
            "ratio": ndcg_gap,
            "met": abs(ndcg_gap) <= 0.02,
        },
        {
            "target": f"nDCG@10 vs Heta within 0.02 ({peer['queries_run']} queries, documents)",
            "measured": f"{peer['heta_eval_ndcg@10_subset']:.3f} vs "
            f"{peer['peer_ndcg@10_subset']:.3f}",
            "ratio": ndcg_gap_docs,
            "met": abs(ndcg_gap_docs) <= 0.02,
        },
        {
            "target": f"{largest['documents']:,} docs + {largest['queries']:,} queries < 120 s",
            "measured": f"{largest['load_evaluate_s']:.1f} s",
            "ratio": largest["load_evaluate_s"] / 120,
            "met": largest["load_evaluate_s"] < 120,
        },
        {
            "target": f"{largest['documents']:,} docs + {largest['queries']:,} queries < 4 GB",
            "measured": f"{largest['peak_rss_mb']:.0f} MB",
            "ratio": largest["peak_rss_mb"] / 4096,
            "met": largest["peak_rss_mb"] < 4096,
        },
        {
            "target": "heta-eval --help < 1.5 s",
            "measured": f"{help_s:.2f} s",
            "ratio": help_s / 1.5,
            "met": help_s < 1.5,
        },
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, 2-3 minutes")
    parser.add_argument("--repeat", type=int, default=None, help="SciFact rounds (default 3)")
    parser.add_argument("--peer-queries", type=int, default=None, help="default 30 (quick: 5)")
    args = parser.parse_args()
    repeat = args.repeat or 3
    started = time.perf_counter()
    info = machine()
    info["disk_probe_at_start_s"] = round(disk_probe(), 3)
    print(f"machine: {info}", flush=True)
    sci = scifact(repeat)
    print("startup ...", flush=True)
    startup_args = ["--repeat", "3"] if args.quick else ["--repeat", "5", "--scifact"]
    startup = run_script("startup.py", *startup_args)
    queries = args.peer_queries or (5 if args.quick else 30)
    print(f"peer: Heta Framework runner on {queries} queries ...", flush=True)
    peer = run_script("peer_heta.py", "--queries", str(queries))
    print("scaling ...", flush=True)
    scaling = run_script("scaling.py", *(["--quick"] if args.quick else []), timeout=3600)
    info["load_average_at_end"] = os.getloadavg()[0]
    info["disk_probe_at_end_s"] = round(disk_probe(), 3)

    print(f"\nSciFact (median of {repeat}; seconds, excluding interpreter start and MLflow)")
    sci_rows = [{"measurement": name, **row} for name, row in sci.items()]
    print_table(sci_rows, SCIFACT_COLUMNS)
    print("\nwhole processes (median)")
    print_table(list(startup.values()), ["process", "median_s", "min_s", "runs"])
    print("\npeer (Heta Framework BenchmarkRunner, in-memory full-text recipe)")
    print_table([peer], [k for k in peer if k != "extrapolation"])
    print("\nscaling (synthetic corpora, one process per point)")
    print_table(scaling, ["axis", *SCALING_COLUMNS])
    goals = targets(sci, startup, peer, scaling)
    print("\ntargets")
    print_table(goals, ["target", "measured", "ratio", "met"])
    elapsed = time.perf_counter() - started
    print(f"\n{info}; {elapsed:.0f} s in all")
    summary = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "machine": info,
        "seconds": elapsed,
        "scifact": sci,
        "startup": startup,
        "peer": peer,
        "scaling": scaling,
        "targets": goals,
    }
    out = RESULTS / ("summary-quick.json" if args.quick else "summary.json")
    write_json(out, summary)
    print(f"written {out}")


if __name__ == "__main__":
    main()
