"""The files a run leaves in its output directory: report.json, report.html and the resolved
configuration. Written once, by the lifecycle, whether evaluated or reused.

report.html is drawn with matplotlib, whose import and drawing cost more than a small run's
evaluation; `HtmlRenderer` does both in a separate process that starts with the run, so the
import happens on another core while the benchmark loads and the recipe is evaluated.
"""

from __future__ import annotations

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

    The worker talks through its own pipes and ends when this process does (its input
    closes), so a killed run leaves nothing behind. A failure to render is logged and never
    fails the run; without a worker, the report is drawn in this process.
    """

    def __init__(self) -> None:
        self._worker: subprocess.Popen[str] | None = None

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

    def render(self, report: EvaluationReport, report_json: Path, html: Path) -> Path:
        """Draw `html` from the written `report_json` (the worker) or `report` (here)."""
        worker, self._worker = self._worker, None
        if worker is None:
            return write_html_report(report, html)
        out, err = worker.communicate(f"{report_json}\n{html}\n", timeout=RENDER_TIMEOUT)
        status, _, detail = out.strip().partition(" ")
        if worker.returncode != 0 or status != "ok":
            last = (err.strip().splitlines() or ["the report.html worker failed"])[-1]
            raise RuntimeError(detail or last)
        return Path(detail)

    def close(self) -> None:
        """Stop a worker that was not used."""
        worker, self._worker = self._worker, None
        if worker is not None and worker.poll() is None:
            worker.kill()
            worker.communicate()


def write_run_artifacts(
    report: EvaluationReport,
    out: Path,
    resolved: Mapping[str, Any],
    renderer: HtmlRenderer | None = None,
) -> dict[str, Path]:
    """Write the run's files into `out`; returns them by role (report, config, html).

    report.html is a view: a failure to render it is logged, never fatal."""
    from omegaconf import OmegaConf

    out.mkdir(parents=True, exist_ok=True)
    artifacts = {"report": report.write_json(out / REPORT_JSON)}
    config = out / RESOLVED_CONFIG
    config.write_text(OmegaConf.to_yaml(dict(resolved)), encoding="utf-8")
    artifacts["config"] = config
    html = out / REPORT_HTML
    try:
        if renderer is not None:
            artifacts["html"] = renderer.render(report, artifacts["report"], html)
        else:
            artifacts["html"] = write_html_report(report, html)
    except Exception as exc:
        log.warning("could not write %s: %s: %s", html, type(exc).__name__, exc)
    return artifacts
