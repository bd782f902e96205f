"""What a run's identity costs: the data digest (documents' bytes, cases, units) and the code
digest, on SciFact and on UDA (the finance subset's bench questions with their pages).

The benchmark is read once into memory (not timed), then the digest that `BenchmarkRunner.load`
computes while reading is timed over the same records: each document's sha256 (which the
object store and the build cache use anyway, so it is not an extra cost), each case's and
unit's JSON, and the code digest (heta_eval's source and the result-shaping libraries). Median
of `--repeat` rounds.

    python benchmarks/identity_cost.py [--repeat 7] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import statistics
import time
from pathlib import Path
from typing import Any

from _common import DATA, SCIFACT, scratch_dir, write_json


def _load(bench: Any, root: Path) -> tuple[list, list, list]:
    from heta_eval.records import BenchmarkWorkspace

    async def go() -> tuple[list, list, list]:
        prepared = await bench.prepare(BenchmarkWorkspace(root=root, offline=True))
        return (
            [d async for d in bench.documents(prepared)],
            [c async for c in bench.cases(prepared)],
            [u async for u in bench.run_units(prepared)],
        )

    return asyncio.run(go())


def _time_digest(bench: Any, loaded: tuple[list, list, list], repeat: int) -> dict[str, float]:
    from heta_eval.run.identity import DataDigest

    documents, cases, units = loaded
    totals, hashing = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        digest = DataDigest(bench.manifest)
        for document in documents:
            digest.document(document)
        for case in cases:
            digest.case(case)
        for unit in units:
            digest.unit(unit)
        digest.hexdigest()
        totals.append(time.perf_counter() - started)
        started = time.perf_counter()
        for document in documents:  # what the store and the build cache compute anyway
            if document.data is not None:
                hashlib.sha256(document.data).hexdigest()
            elif document.path is not None:
                hashlib.sha256(Path(document.path).read_bytes()).hexdigest()
        hashing.append(time.perf_counter() - started)
    total, shared = statistics.median(totals), statistics.median(hashing)
    return {
        "documents": len(documents),
        "cases": len(cases),
        "units": len(units),
        "digest_seconds": total,
        "document_sha256_seconds": shared,
        "added_seconds": max(total - shared, 0.0),
    }


def _code_digest(repeat: int) -> float:
    from heta_eval import code_identity
    from heta_eval.run.identity import code_digest

    times = []
    for _ in range(repeat):
        code_identity.source_digest.cache_clear()
        code_identity.library_versions.cache_clear()
        started = time.perf_counter()
        code_digest(["heta_eval.benchmarks.beir"])
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from heta_eval.benchmarks.beir import BeirBenchmark
    from heta_eval.benchmarks.uda import UdaBenchmark

    rows: dict[str, Any] = {}
    scratch = scratch_dir("identity-")
    scifact = BeirBenchmark(dataset="scifact", data_root=SCIFACT)
    rows["scifact"] = _time_digest(scifact, _load(scifact, scratch), args.repeat)
    uda = UdaBenchmark(subset="fin", data_root=DATA / "uda")
    rows["uda-fin"] = _time_digest(uda, _load(uda, scratch), args.repeat)
    code = _code_digest(args.repeat)
    print(
        f"{'benchmark':<10} {'docs':>6} {'cases':>6} {'units':>6} {'digest s':>9} "
        f"{'of which sha256 s':>18} {'added s':>8}"
    )
    for name, row in rows.items():
        print(
            f"{name:<10} {row['documents']:>6} {row['cases']:>6} {row['units']:>6} "
            f"{row['digest_seconds']:>9.4f} {row['document_sha256_seconds']:>18.4f} "
            f"{row['added_seconds']:>8.4f}"
        )
    print(f"code digest (heta_eval source + library versions, uncached): {code:.4f} s")
    write_json(args.json, {"data": rows, "code_digest_seconds": code})


if __name__ == "__main__":
    main()
