"""The report.html worker (`python -m heta_eval.run.html_worker`, started by `HtmlRenderer`).

It imports what drawing needs at once, then reads two lines from its input, the written
report.json and the report.html to draw, and answers `ok PATH` or `error MESSAGE`. An input
that closes early (the run ended or was killed) ends it without drawing; Ctrl-C and SIGTERM
are the run's to handle (this worker ends with its input).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path


def main() -> int:
    """Import, wait for the report, draw it; the exit status is 0 unless the input is bad."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401

    from heta_eval.records import EvaluationReport
    from heta_eval.reporting import write_html_report

    lines = sys.stdin.read().splitlines()
    if len(lines) < 2:
        return 0
    try:
        report = EvaluationReport.read_json(Path(lines[0]))
        print("ok", write_html_report(report, Path(lines[1])))
    except Exception as exc:
        print("error", f"{type(exc).__name__}: {exc}".splitlines()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
