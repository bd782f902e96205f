"""The report.html figure worker (`python -m heta_eval.run.html_worker`, started by
`HtmlRenderer`).

It imports matplotlib and draws a first figure at once (fonts, caches), then reads lines
from its input, each a page's figure specs as JSON (`heta_eval.reporting.figures`), draws
them and answers one line: `{"pngs": [base64, ...]}` or `{"error": MESSAGE}`. A single run
sends one page; the jobs of a sweep in one process share the worker (`HtmlPages`), one page
each. Its input closing (the run or sweep ended, or was killed) ends it; Ctrl-C and SIGTERM
are the run's to handle (this worker ends with its input).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys


def main() -> int:
    """Import, then draw each page's specs as they come; the exit status is 0."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401

    from heta_eval.reporting.figures import draw

    # A first drawing loads fonts and fills matplotlib's caches: done while the run goes on.
    draw({"kind": "histogram", "metric": "warm-up", "values": {"warm-up": [0.0, 0.5, 1.0]}})

    for line in sys.stdin:
        if not line.endswith("\n"):
            break
        try:
            pngs = [base64.b64encode(draw(spec)).decode("ascii") for spec in json.loads(line)]
            answer: dict[str, object] = {"pngs": pngs}
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    status = main()
    # The figures are answered: end now, without the interpreter's teardown of matplotlib
    # (which the run would otherwise wait for).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
