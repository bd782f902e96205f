"""Run reports for people: `report.html`, a static page with plots, written beside report.json."""

from heta_eval.reporting.html import REPORT_HTML, render_html, write_html_report

__all__ = ["REPORT_HTML", "render_html", "write_html_report"]
