"""The files a run leaves in its output directory: report.json, report.html and the resolved
configuration. Written once, by the lifecycle, whether evaluated or reused: the run
directory is the source of truth, which the tracker then projects into MLflow."""

from __future__ import annotations

import logging
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


def write_report_html(report: EvaluationReport, page: Path) -> Path:
    """Render report.html with its figures (matplotlib) into `page`."""
    figures = FigureSet(collect=True)
    text = render_html(report, figures)
    return write_page(figures.fill(text, [draw(spec) for spec in figures.specs]), page)


def write_run_artifacts(
    report: EvaluationReport, out: Path, resolved: Mapping[str, Any]
) -> dict[str, Path]:
    """Write the run's files into `out`; returns them by role (report, config, html).

    report.html is a view: a failure to render it is logged, never fatal."""
    from omegaconf import OmegaConf

    out.mkdir(parents=True, exist_ok=True)
    artifacts = {"report": report.write_json(out / REPORT_JSON)}
    config = out / RESOLVED_CONFIG
    config.write_text(OmegaConf.to_yaml(dict(resolved)), encoding="utf-8")
    artifacts["config"] = config
    page = out / REPORT_HTML
    try:
        artifacts["html"] = write_report_html(report, page)
    except Exception as exc:
        log.warning("could not write %s: %s: %s", page, type(exc).__name__, exc)
    return artifacts
