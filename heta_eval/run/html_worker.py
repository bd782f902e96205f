"""The report.html worker (`python -m heta_eval.run.html_worker`, started by `HtmlRenderer`).

It imports what drawing needs at once, then reads two lines from its input, the report.html
to draw and the report as one line of JSON, and answers `ok PATH` or `error MESSAGE`. An input
that closes early (the run ended or was killed) ends it without drawing; Ctrl-C and SIGTERM
are the run's to handle (this worker ends with its input).
"""

from __future__ import annotations

import os
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
    from heta_eval.reporting import plots, write_html_report

    # A first drawing loads fonts and fills matplotlib's caches: done while the run goes on.
    plots.histogram("warm-up", {"warm-up": [0.0, 0.5, 1.0]})

    html = sys.stdin.readline().rstrip("\n")
    report_json = sys.stdin.readline()
    if not html or not report_json.endswith("\n"):
        return 0
    try:
        report = EvaluationReport.model_validate_json(report_json)
        print("ok", write_html_report(report, Path(html)))
    except Exception as exc:
        print("error", f"{type(exc).__name__}: {exc}".splitlines()[0])
    return 0


if __name__ == "__main__":
    status = main()
    # The page is written and answered: end now, without the interpreter's teardown of the
    # report and matplotlib (about 0.3 s the run would otherwise wait for).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
