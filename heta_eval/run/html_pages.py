"""report.html of the jobs of a sweep, written off their path.

A single run writes its page before it logs its artifacts (`artifacts.HtmlRenderer`). The
jobs of a sweep in one process hand their page over instead (`HtmlPages.submit`) and go on:
one thread renders the page's text, has the figures drawn by one figure worker kept for
the whole sweep (`python -m heta_eval.run.html_worker`, matplotlib imported once), writes
the page and calls the job's `then` with it (which logs it to the job's tracking run).
Pages are written in the order they were handed over; `wait` returns once every page handed
over is written (the sweep's end waits for it), `close` stops the thread and the worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import subprocess
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationReport
from heta_eval.reporting import REPORT_HTML

__all__ = ["REPORT_HTML", "HtmlPages"]

log = logging.getLogger(__name__)

Page = tuple[EvaluationReport, Path, Callable[[Path], None] | None]


class HtmlPages:
    """Writes report.html pages in a background thread, figures drawn by one kept worker."""

    def __init__(self) -> None:
        self._worker: subprocess.Popen[str] | None = None
        self._queue: queue.Queue[Page | threading.Event] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stderr: deque[str] = deque(maxlen=20)
        self._start_worker()

    def _start_worker(self) -> None:
        from heta_eval.run.artifacts import spawn_figure_worker

        self._worker = spawn_figure_worker()
        if self._worker is None:
            return
        # Its stderr is read all along (a full pipe would stop it mid-sweep), its last lines
        # kept to say why it failed.
        threading.Thread(
            target=self._read_stderr, args=(self._worker.stderr,), name="html-stderr", daemon=True
        ).start()

    def _read_stderr(self, stream: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            for line in stream:
                self._stderr.append(line.rstrip())

    def submit(
        self, report: EvaluationReport, html: Path, then: Callable[[Path], None] | None = None
    ) -> None:
        """Write `report`'s page to `html` in the background, then call `then(html)`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._write_pages, name="html-pages")
            self._thread.daemon = True
            self._thread.start()
        self._queue.put((report, html, then))

    def wait(self, timeout: float) -> None:
        """Return once every page handed over is written (or `timeout` seconds passed)."""
        if self._thread is None:
            return
        done = threading.Event()
        self._queue.put(done)  # set by the thread when it gets there
        if not done.wait(timeout):
            log.warning("report.html pages not all written within %.0f s", timeout)

    def close(self) -> None:
        """Stop the figure worker (after `wait`)."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        with contextlib.suppress(OSError, ValueError):
            assert worker.stdin is not None
            worker.stdin.close()
        try:
            worker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        for stream in (worker.stdout, worker.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()

    def _write_pages(self) -> None:
        """Thread: each page in turn; a page that fails is logged, never fatal."""
        while True:
            page = self._queue.get()
            if isinstance(page, threading.Event):
                page.set()
                continue
            report, html, then = page
            try:
                self._write(report, html)
            except Exception as exc:
                log.warning("could not write %s: %s: %s", html, type(exc).__name__, exc)
                continue
            if then is not None:
                try:
                    then(html)
                except Exception as exc:
                    log.warning("could not log %s: %s: %s", html, type(exc).__name__, exc)

    def _write(self, report: EvaluationReport, html: Path) -> None:
        from heta_eval.reporting import render_html
        from heta_eval.reporting.figures import FigureSet, draw
        from heta_eval.reporting.html import write_page

        figures = FigureSet(collect=True)
        text = render_html(report, figures)
        pngs = self._drawn(figures.specs) if self._worker is not None else None
        if pngs is None:
            pngs = [draw(spec) for spec in figures.specs]
        write_page(figures.fill(text, pngs), html)

    def _drawn(self, specs: list[Any]) -> list[bytes] | None:
        """The figures drawn by the worker; None when it is gone (drawn here instead)."""
        from heta_eval.run.artifacts import answer_pngs

        worker = self._worker
        assert worker is not None and worker.stdin is not None and worker.stdout is not None
        try:
            worker.stdin.write(json.dumps(specs) + "\n")
            worker.stdin.flush()
            line = worker.stdout.readline()
        except (OSError, ValueError) as exc:
            log.debug("report.html worker gone (%s); drawing in-process", exc)
            line = ""
        if not line:
            self._worker = None
            with contextlib.suppress(OSError):
                worker.kill()
            worker.wait()
            return None
        return answer_pngs(line, "\n".join(self._stderr))
