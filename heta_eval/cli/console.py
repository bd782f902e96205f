"""What a run prints at the end: the score summary as a table."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from heta_eval.records import EvaluationReport
from heta_eval.reporting.data import knowledge_base_counts
from heta_eval.run.failures import failure_reasons, skipped_reasons


def summary_table(report: EvaluationReport, job: str | None = None) -> Table:
    """One row per (query mode, metric): mean, confidence interval, and case counts; the
    title names the benchmark and recipe, and `job` (a sweep's `job #2: recipe=bm25 …`)."""
    title = f"{report.benchmark.key} · recipe {report.recipe_manifest.get('name', '?')}"
    table = Table(title=f"{escape(job)}\n{title}" if job else title, title_justify="left")
    details = report.score_details
    level = next(iter(details.values())).confidence if details else 0.95
    columns = ("query mode", "metric", "mean", f"{level:.0%} CI", "scored", "skipped", "failed")
    for column in columns:
        table.add_column(column, justify="left" if column in ("query mode", "metric") else "right")
    for key, detail in details.items():
        mode, _, metric = key.partition(".")
        mean = "—" if detail.mean is None else f"{detail.mean:.4f}"
        interval = (
            "—"
            if detail.ci_low is None or detail.ci_high is None
            else f"[{detail.ci_low:.3f}, {detail.ci_high:.3f}]"
        )
        skipped = str(detail.skipped + detail.undetermined)
        table.add_row(mode, metric, mean, interval, str(detail.scored), skipped, str(detail.failed))
    return table


def cache_line(report: EvaluationReport) -> str:
    """What the build and response caches did, from the report's `cache` metadata."""
    cache = report.run.cache
    mode = cache.get("mode", "off")
    if mode == "off":
        return "cache: off"
    line = (
        f"cache ({mode}): knowledge bases {cache.get('hits', 0)} hit(s), "
        f"{cache.get('misses', 0)} miss(es), {cache.get('written', 0)} written"
    )
    if cache.get("discarded"):
        line += f", {cache['discarded']} corrupt discarded"
    if cache.get("uncacheable"):
        line += f", {cache['uncacheable']} not cacheable"
    return line + (
        f" · responses {cache.get('response_hits', 0)} hit(s), "
        f"{cache.get('response_misses', 0)} miss(es)"
    )


def reuse_line(report: EvaluationReport) -> str | None:
    """Which earlier evaluation a reused result comes from, or None for a fresh one."""
    source = report.run.reused_from
    if source is None:
        return None
    when = source.finished_at.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    where = f", tracking run {source.tracking_run_id}" if source.tracking_run_id else ""
    return (
        f"reused the result evaluated on {when} (report {source.report_id[:12]}{where}): same "
        "configuration, data and code; runner.resume=false evaluates again"
    )


def knowledge_base_line(report: EvaluationReport) -> str:
    """`2 knowledge base(s): 1 built in 3.10 s, 1 loaded from the build cache in 0.01 s`."""
    kbs = report.knowledge_base_manifests
    return f"{len(kbs)} knowledge base(s): {knowledge_base_counts(kbs)}"


def print_summary(report: EvaluationReport, job: str | None = None) -> None:
    """Print the summary table (headed by `job` in a sweep), where the report is, and how to
    see the tracked run."""
    run_dir = report.run.output_dir or "."
    console = Console()
    if not console.is_terminal:
        # Logs and CI have no terminal width; don't squeeze metric names into 80 columns.
        console = Console(width=max(console.width, 120))
    console.print(summary_table(report, job))
    evaluated = len(report.case_results)
    failed = len(report.failed_cases)
    reused = reuse_line(report)
    if reused:
        # Nothing was built, queried or cached now: the counts below would be the old run's.
        console.print(f"{evaluated} case results ({failed} failed) · nothing evaluated now")
        console.print(reused, soft_wrap=True)
    else:
        console.print(f"{evaluated} case results ({failed} failed) · {knowledge_base_line(report)}")
        if report.run.resumed_cases:
            console.print(
                f"{report.run.resumed_cases} case results taken from the journal of an "
                "interrupted run"
            )
        if report.run.retried_cases:
            console.print(
                f"{report.run.retried_cases} failed case results of an earlier attempt retried"
            )
        console.print(cache_line(report), soft_wrap=True)
    print_document_errors(console, report)
    print_recipe_notes(console, report)
    print_reasons(console, report)
    console.print(f"run directory: {run_dir}", soft_wrap=True)
    console.print(f"report: {run_dir}/report.json", soft_wrap=True)
    if (Path(run_dir) / "report.html").is_file():
        console.print(f"html report: {run_dir}/report.html", soft_wrap=True)
    tracking = report.run.tracking
    console.print(f"tracking: {tracking.where or tracking.run_id or 'disabled'}", soft_wrap=True)


def print_reasons(console: Console, report: EvaluationReport) -> None:
    """Why case results failed and why metrics without any score were skipped, most
    frequent first, with counts."""

    reasons = failure_reasons(report)
    if reasons:
        console.print("most frequent failure reasons:")
        for count, why in reasons:
            console.print(f"  {count}x {why}", soft_wrap=True, markup=False)
    for key, skipped in skipped_reasons(report).items():
        why = "; ".join(f"{count}x {reason}" for count, reason in skipped)
        console.print(f"{key}: no score, skipped: {why}", soft_wrap=True, markup=False)


def print_recipe_notes(console: Console, report: EvaluationReport) -> None:
    """What the recipe found about its inputs (a replay: docids not in the corpus, cases
    its files do not cover), as its manifest's `notes` say it."""
    for note in report.recipe_manifest.get("notes") or ():
        console.print(str(note), soft_wrap=True, markup=False)


def print_document_errors(console: Console, report: EvaluationReport, shown: int = 5) -> None:
    """Name the documents that could not be stored or indexed, and why (the first few)."""
    errors = dict(report.run.document_errors)
    for manifest in report.knowledge_base_manifests:
        errors.update(manifest.document_errors)
    if not errors:
        return
    console.print(f"{len(errors)} document(s) not indexed (see document_errors in the report):")
    for key, why in list(errors.items())[:shown]:
        console.print(f"  {key}: {why}", soft_wrap=True, markup=False)
