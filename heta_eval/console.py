"""What a run prints at the end: the score summary as a table."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from heta_eval.records import EvaluationReport


def summary_table(report: EvaluationReport) -> Table:
    """One row per (query mode, metric) with the mean and how many cases it covers."""
    table = Table(
        title=f"{report.benchmark.key} · recipe {report.recipe_manifest.get('name', '?')}",
        title_justify="left",
    )
    for column in ("query mode", "metric", "mean", "scored", "skipped", "failed"):
        table.add_column(column, justify="left" if column in ("query mode", "metric") else "right")
    for key, detail in report.score_details.items():
        mode, _, metric = key.partition(".")
        mean = "—" if detail.mean is None else f"{detail.mean:.4f}"
        table.add_row(
            mode, metric, mean, str(detail.scored), str(detail.skipped), str(detail.failed)
        )
    return table


def print_summary(report: EvaluationReport, *, run_dir: str, tracking: str) -> None:
    """Print the summary table, where the report is, and how to see the tracked run."""
    console = Console()
    console.print(summary_table(report))
    evaluated = len(report.case_results)
    failed = len(report.failed_cases)
    build = sum(kb.build_seconds for kb in report.knowledge_base_manifests)
    console.print(
        f"{evaluated} case results ({failed} failed) · "
        f"{len(report.knowledge_base_manifests)} knowledge base(s) built in {build:.2f}s"
    )
    console.print(f"report: {run_dir}/report.json", soft_wrap=True)
    console.print(f"tracking: {tracking}", soft_wrap=True)
