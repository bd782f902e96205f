"""The files a run leaves in its output directory: report.json, report.html and the resolved
configuration. Written once, by the lifecycle, whether evaluated or reused.

report.html is drawn with matplotlib, whose import and drawing cost more than a small run's
evaluation; `HtmlRenderer` does both in a separate process that starts with the run, so the
import happens on another core while the benchmark loads and the recipe is evaluated.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationReport
from heta_eval.reporting import REPORT_HTML, write_html_report

log = logging.getLogger(__name__)

REPORT_JSON = "report.json"
RESOLVED_CONFIG = "config.resolved.yaml"
RENDER_TIMEOUT = 600  # seconds; a report of 100k cases draws in well under a minute


class HtmlRenderer:
    """Renders report.html in a worker process started ahead of time
    (`python -m heta_eval.run.html_worker`), which imports matplotlib while the run goes on.

    `submit` hands the worker the report (as JSON, the same text the tracker worker gets)
    before report.json is written, so that it reads and draws while this process writes;
    `finish` waits for the page. The worker talks through its own pipes and ends when this
    process does (its input closes), so a killed run leaves nothing behind. A failure to
    render is logged and never fails the run; without a worker, the report is drawn here.
    """

    def __init__(self) -> None:
        self._worker: subprocess.Popen[str] | None = None
        self._submitted: tuple[EvaluationReport, Path] | None = None

    def start(self) -> None:
        """Start the worker."""
        try:
            self._worker = subprocess.Popen(
                [sys.executable, "-m", "heta_eval.run.html_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        except OSError as exc:
            log.debug("report.html worker not started (%s); drawing in-process", exc)

    def submit(self, report: EvaluationReport, html: Path, report_json: str | None = None) -> None:
        """Start drawing `html` from `report` (`report_json`: its `model_dump_json()`, when
        the caller has it already)."""
        self._submitted = (report, html)
        worker = self._worker
        if worker is None or worker.stdin is None:
            return
        try:
            worker.stdin.write(f"{html}\n{report_json or report.model_dump_json()}\n")
            worker.stdin.flush()  # `finish` (communicate) closes it
        except OSError as exc:  # the worker is gone: draw here
            log.debug("report.html worker did not take the report (%s)", exc)
            self.close()

    def finish(self) -> Path:
        """The drawn page; raises with the reason when drawing failed."""
        if self._submitted is None:
            raise RuntimeError("HtmlRenderer.finish called before submit")
        (report, html), self._submitted = self._submitted, None
        worker, self._worker = self._worker, None
        if worker is None:
            return write_html_report(report, html)
        out, err = worker.communicate(timeout=RENDER_TIMEOUT)
        status, _, detail = out.strip().partition(" ")
        if worker.returncode != 0 or status != "ok":
            last = (err.strip().splitlines() or ["the report.html worker failed"])[-1]
            raise RuntimeError(detail or last)
        return Path(detail)

    def close(self) -> None:
        """Stop a worker that was not used (or is no longer)."""
        worker, self._worker = self._worker, None
        if worker is not None and worker.poll() is None:
            worker.kill()
        if worker is not None:
            with contextlib.suppress(OSError, ValueError):
                worker.communicate()


def write_run_artifacts(
    report: EvaluationReport,
    out: Path,
    resolved: Mapping[str, Any],
    renderer: HtmlRenderer | None = None,
    report_json: str | None = None,
) -> dict[str, Path]:
    """Write the run's files into `out`; returns them by role (report, config, html).

    `report_json` is the report's `model_dump_json()` when the caller has it (the drawing
    worker reads it instead of the written file). report.html is a view: a failure to
    render it is logged, never fatal."""
    from omegaconf import OmegaConf

    out.mkdir(parents=True, exist_ok=True)
    html = out / REPORT_HTML
    renderer = renderer or HtmlRenderer()
    renderer.submit(report, html, report_json)  # drawn while the files below are written
    artifacts = {"report": report.write_json(out / REPORT_JSON)}
    config = out / RESOLVED_CONFIG
    config.write_text(OmegaConf.to_yaml(dict(resolved)), encoding="utf-8")
    artifacts["config"] = config
    try:
        artifacts["html"] = renderer.finish()
    except Exception as exc:
        log.warning("could not write %s: %s: %s", html, type(exc).__name__, exc)
    return artifacts
