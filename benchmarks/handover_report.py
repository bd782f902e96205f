"""What the process a run hands its logging to reads: the whole report.json against the report
as the tracker logs it (`report_for_logging`), on a large synthetic report.

Usage: python benchmarks/handover_report.py [--base REPORT] [--cases 100000] [--items 10]
       [--rounds 3] [--json PATH]

The report is `--base` (a report.json, e.g. a SciFact bm25 run's; default: the sample
benchmark's, from a real untracked `heta-eval` run) with its first case result copied
`--cases` times, each with `--items` retrieved items of distinct documents (a top_k of
`--items`, one chunk a document, with its character span as a BEIR run has). Timed, each
`--rounds` times (the least and the median):

- `read_whole`: `EvaluationReport.read_json(report.json)`, what a sweep's tracker worker and
  the tracking service's replay did before;
- `read_logged`: `EvaluationReport.model_validate_json` of the report as the tracker logs
  it, what they read now;
- `send_logged`: `report_for_logging(report).model_dump_json()` in the run's process, the
  cost the hand-over adds there (report.json is written either way);
- `spool_logged`: the tracking service's spool file with that report in it, written and
  fsynced (`tracking_service.write_spool`), which the run waits for; before, the spool file
  held the report's path only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import sample_report


def grown(report: Any, cases: int, items: int) -> Any:
    """`report` with `cases` copies of its first case result, `items` retrieved each."""
    from heta_eval.records import RetrievedItem

    first = report.case_results[0]
    results = []
    for n in range(cases):
        retrieved = tuple(
            RetrievedItem(id=f"{doc}#0", score=100.0 - i, document_id=doc, chunk_id=f"{doc}#0",
                          start_char=0, end_char=1000 + i)
            for i, doc in ((i, f"{(n * 7 + i) % 1_000_000}") for i in range(items))
        )  # fmt: skip
        results.append(
            first.model_copy(
                update={"case_id": f"q{n}", "unit_id": f"q{n}", "retrieved": retrieved}
            )
        )
    return report.model_copy(update={"case_results": tuple(results)})


def timed(call: Callable[[], Any], rounds: int) -> tuple[float, float]:
    """(least, median) seconds of `rounds` calls."""
    seconds = []
    for _ in range(rounds):
        began = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - began)
    return min(seconds), statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--base", type=Path, help="a report.json to grow")
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from heta_eval.run.tracking_service import write_spool

    from heta_eval.records import EvaluationReport
    from heta_eval.tracking.mlflow_tracker import report_for_logging

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = EvaluationReport.read_json(args.base or sample_report(root, "tracking=none"))
        report = grown(base, args.cases, args.items)
        path = report.write_json(root / "big" / "report.json")
        logged = report_for_logging(report).model_dump_json()
        spool_dir = root / "service"
        spool_dir.mkdir(mode=0o700)
        call = {"op": "finish", "report": logged, "artifacts": {"report": str(path)}}
        results = {
            "read_whole": timed(lambda: EvaluationReport.read_json(path), args.rounds),
            "read_logged": timed(lambda: EvaluationReport.model_validate_json(logged), args.rounds),
            "send_logged": timed(lambda: report_for_logging(report).model_dump_json(), args.rounds),
            "spool_logged": timed(
                lambda: write_spool(spool_dir, "run", {"_target_": "x"}, call), args.rounds
            ),
        }
        sizes = {
            "report_json_bytes": path.stat().st_size,
            "logged_json_bytes": len(logged.encode()),
            "retrieved_items": sum(len(r.retrieved) for r in report.case_results),
            "retrieved_items_logged": sum(
                len(r.retrieved) for r in report_for_logging(report).case_results
            ),
        }
    print(f"{args.cases} case results x {args.items} retrieved items; {args.rounds} rounds")
    for name, value in sizes.items():
        print(f"  {name:24} {value:>14,}")
    for name, (least, median) in results.items():
        print(f"  {name:24} least {least:7.3f} s   median {median:7.3f} s")
    print(f"  uptime: {os.getloadavg()}")
    if args.json:
        out = {
            "cases": args.cases,
            "items": args.items,
            "rounds": args.rounds,
            **sizes,
            **{f"{k}_least_s": v[0] for k, v in results.items()},
            **{f"{k}_median_s": v[1] for k, v in results.items()},
            "loadavg": os.getloadavg(),
        }
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
