"""The files a run leaves in its output directory: report.json, report.html and the resolved
configuration. Written once, by the lifecycle, whether evaluated or reused.

report.html is drawn with matplotlib, whose import and drawing cost more than a small run's
evaluation; `HtmlRenderer` does both in a separate process that starts with the run, so the
import happens on another core while the benchmark loads and the recipe is evaluated.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationReport
from heta_eval.reporting import REPORT_HTML, write_html_report

log = logging.getLogger(__name__)

REPORT_JSON = "report.json"
RESOLVED_CONFIG = "config.resolved.yaml"


def _warm_up() -> None:
    """Import what drawing the report needs (in the renderer's process)."""
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401


def _render(report_json: str, html: str) -> str:
    """Draw report.html from a written report.json (in the renderer's process)."""
    return str(write_html_report(EvaluationReport.read_json(Path(report_json)), Path(html)))


class HtmlRenderer:
    """Renders report.html in a worker process started ahead of time (a failure to render
    is logged and never fails the run)."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None

    def start(self) -> None:
        """Start the worker and let it import matplotlib while the run goes on."""
        try:
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=get_context("forkserver"))
            self._pool.submit(_warm_up)
        except Exception as exc:  # no worker: render in this process
            log.debug("report.html renderer not started (%s); rendering in-process", exc)
            self._pool = None

    def render(self, report_json: Path, html: Path) -> Future[str] | None:
        """Start drawing `html` from `report_json`; None when there is no worker."""
        if self._pool is None:
            return None
        try:
            return self._pool.submit(_render, str(report_json), str(html))
        except Exception as exc:  # a broken worker: render in this process
            log.debug("report.html renderer unavailable (%s); rendering in-process", exc)
            return None

    def close(self) -> None:
        """Stop the worker (an unfinished drawing is abandoned)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


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
    html = out / REPORT_HTML
    drawing = renderer.render(artifacts["report"], html) if renderer is not None else None
    config = out / RESOLVED_CONFIG
    config.write_text(OmegaConf.to_yaml(dict(resolved)), encoding="utf-8")
    artifacts["config"] = config
    try:
        if drawing is not None:
            artifacts["html"] = Path(drawing.result())
        else:
            artifacts["html"] = write_html_report(report, html)
    except Exception as exc:
        log.warning("could not write %s: %s: %s", html, type(exc).__name__, exc)
    return artifacts
