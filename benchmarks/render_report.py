"""Render a run's report.html to a PNG screenshot with headless Chromium, and time it.

Usage:
  python benchmarks/render_report.py                      # evaluates the sample benchmark
  python benchmarks/render_report.py --report outputs/runs/.../report.json
  python benchmarks/render_report.py --out /tmp/shot --height 6000

Without --report, a real run of the bundled sample benchmark (recipe bm25_fusion: three
query modes, an extractive answerer and answer metrics) is made under a temporary
paths.root. The report is (re)rendered to OUT/report.html and Chromium (/usr/bin/chromium,
Debian's `chromium` package) writes OUT/report-screenshot.png; both paths are printed, with
the page's size and the time it took to render.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import sample_report

from heta_eval.records import EvaluationReport
from heta_eval.reporting import REPORT_HTML, write_html_report

SAMPLE_RUN = (
    "recipe=bm25_fusion",
    "evaluator=with_answers",
    "recipe.answerer={_target_:heta_eval.kb.ExtractiveAnswerer}",
)
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def screenshot(page: Path, png: Path, width: int, height: int, chromium: str) -> None:
    """Headless Chromium renders `page` into `png` at width x height pixels."""
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--screenshot={png}",
                f"--window-size={width},{height}",
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    if proc.returncode != 0 or not png.is_file():
        sys.exit(f"chromium failed ({proc.returncode}):\n{proc.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--report", type=Path, help="a report.json (default: a sample run)")
    parser.add_argument("--out", type=Path, default=Path("outputs/report-render"))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=2400)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.report or sample_report(Path(tmp), *SAMPLE_RUN)
        report = EvaluationReport.read_json(path)
    started = time.perf_counter()
    page = write_html_report(report, args.out / REPORT_HTML)
    seconds = time.perf_counter() - started
    png = args.out / "report-screenshot.png"
    screenshot(page, png, args.width, args.height, args.chromium)
    print(
        f"{len(report.case_results)} case results: {page} "
        f"({page.stat().st_size / 1e3:.0f} kB, rendered in {seconds:.2f} s)"
    )
    print(f"screenshot: {png}")


if __name__ == "__main__":
    main()
