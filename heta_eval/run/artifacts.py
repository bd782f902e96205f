"""The files a run leaves in its output directory: report.json, report.html and the
resolved configuration. Written once, by the lifecycle, whether evaluated or reused."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationReport

log = logging.getLogger(__name__)

REPORT_JSON = "report.json"
RESOLVED_CONFIG = "config.resolved.yaml"


def write_run_artifacts(
    report: EvaluationReport, out: Path, resolved: Mapping[str, Any]
) -> dict[str, Path]:
    """Write the run's files into `out`; returns them by role (report, config, html).

    report.html is a view: a failure to render it is logged, never fatal."""
    from omegaconf import OmegaConf

    from heta_eval.reporting import REPORT_HTML, write_html_report

    out.mkdir(parents=True, exist_ok=True)
    artifacts = {"report": report.write_json(out / REPORT_JSON)}
    config = out / RESOLVED_CONFIG
    config.write_text(OmegaConf.to_yaml(dict(resolved)), encoding="utf-8")
    artifacts["config"] = config
    try:
        artifacts["html"] = write_html_report(report, out / REPORT_HTML)
    except Exception as exc:
        log.warning("could not write %s: %s: %s", out / REPORT_HTML, type(exc).__name__, exc)
    return artifacts
