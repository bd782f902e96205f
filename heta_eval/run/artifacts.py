"""The files a run leaves in its output directory: report.json, report.html and the resolved
configuration. Written once, by the lifecycle, whether evaluated or reused.

report.html's figures are drawn with matplotlib, whose import and drawing cost more than a
small run's evaluation; `HtmlRenderer` has both done in a separate process that starts with
the run, so the import happens on another core while the benchmark loads and the recipe is
evaluated, and the figures are drawn while report.json is written.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationReport
from heta_eval.reporting import REPORT_HTML, render_html
from heta_eval.reporting.figures import FigureSet, draw
from heta_eval.reporting.html import write_page

log = logging.getLogger(__name__)

REPORT_JSON = "report.json"
RESOLVED_CONFIG = "config.resolved.yaml"
RENDER_TIMEOUT = 600  # seconds; a report of 100k cases draws in well under a minute


def spawn_figure_worker() -> subprocess.Popen[str] | None:
    """The report.html figure worker (`python -m heta_eval.run.html_worker`), talking over
    pipes; None when it cannot be started (the figures are then drawn in-process)."""
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "heta_eval.run.html_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    except OSError as exc:
        log.debug("report.html worker not started (%s); drawing in-process", exc)
        return None


class HtmlRenderer:
    """Renders report.html, its figures drawn by a worker process started ahead of time
    (`python -m heta_eval.run.html_worker`), which imports matplotlib while the run goes on.

    `submit` renders the page's text here, leaving placeholders, and sends the worker the
    figures as data (a few kilobytes, not the report), so that it draws while this process
    writes report.json; `finish` puts the figures in and writes the page. The worker talks
    through its own pipes and ends when this process does (its input closes), so a killed
    run leaves nothing behind. A failure to render is logged and never fails the run;
    without a worker, the figures are drawn in this process.
    """

    def __init__(self) -> None:
        self._worker: subprocess.Popen[str] | None = None
        self._submitted: tuple[str, FigureSet, Path] | None = None

    def start(self) -> None:
        """Start the worker."""
        self._worker = spawn_figure_worker()

    def submit(self, report: EvaluationReport, html: Path) -> None:
        """Render `html`'s text and start drawing its figures."""
        figures = FigureSet(collect=True)
        self._submitted = (render_html(report, figures), figures, html)
        worker = self._worker
        if worker is None or worker.stdin is None:
            return
        try:
            worker.stdin.write(json.dumps(figures.specs) + "\n")
            worker.stdin.flush()  # `finish` (communicate) closes it
        except OSError as exc:  # the worker is gone: draw here
            log.debug("report.html worker did not take the figures (%s)", exc)
            self.close()

    def finish(self) -> Path:
        """Write the page; raises with the reason when drawing failed."""
        if self._submitted is None:
            raise RuntimeError("HtmlRenderer.finish called before submit")
        (page, figures, html), self._submitted = self._submitted, None
        worker, self._worker = self._worker, None
        if worker is None:
            pngs = [draw(spec) for spec in figures.specs]
        else:
            pngs = _drawn(*worker.communicate(timeout=RENDER_TIMEOUT))
        return write_page(figures.fill(page, pngs), html)

    def close(self) -> None:
        """Stop a worker that was not used (or is no longer)."""
        worker, self._worker = self._worker, None
        if worker is not None and worker.poll() is None:
            worker.kill()
        if worker is not None:
            with contextlib.suppress(OSError, ValueError):
                worker.communicate()


def _drawn(out: str, err: str) -> list[bytes]:
    """The worker's figures from its answer; raises with its reason when it failed."""
    return answer_pngs(out.splitlines()[0] if out.strip() else "", err)


def answer_pngs(line: str, err: str = "") -> list[bytes]:
    """The figures of one answer line of the report.html worker; raises with its reason
    when it failed."""
    try:
        answer = json.loads(line)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and isinstance(answer.get("pngs"), list):
        return [base64.b64decode(png) for png in answer["pngs"]]
    if isinstance(answer, dict) and answer.get("error"):
        raise RuntimeError(str(answer["error"]))
    raise RuntimeError((err.strip().splitlines() or ["the report.html worker failed"])[-1])


def write_run_artifacts(
    report: EvaluationReport,
    out: Path,
    resolved: Mapping[str, Any],
    renderer: HtmlRenderer | None = None,
    *,
    html: bool = True,
) -> dict[str, Path]:
    """Write the run's files into `out`; returns them by role (report, config, html).

    report.html is a view: a failure to render it is logged, never fatal. Without `html`,
    it is left to the caller (a sweep's job hands it to `html_pages.HtmlPages`)."""
    from omegaconf import OmegaConf

    out.mkdir(parents=True, exist_ok=True)
    page = out / REPORT_HTML
    if html:
        renderer = renderer or HtmlRenderer()
        try:
            renderer.submit(report, page)  # figures drawn while the files below are written
        except Exception as exc:
            log.warning("could not render %s: %s: %s", page, type(exc).__name__, exc)
            renderer = None
    else:
        renderer = None
    artifacts = {"report": report.write_json(out / REPORT_JSON)}
    config = out / RESOLVED_CONFIG
    config.write_text(OmegaConf.to_yaml(dict(resolved)), encoding="utf-8")
    artifacts["config"] = config
    if renderer is not None:
        try:
            artifacts["html"] = renderer.finish()
        except Exception as exc:
            log.warning("could not write %s: %s: %s", page, type(exc).__name__, exc)
    return artifacts
