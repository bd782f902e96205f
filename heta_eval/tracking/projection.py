"""A run directory as MLflow shows it: the metrics, params, tags, case table and artifacts
of one report, and the calls that log them.

`log_run_directory` is the one way a run reaches MLflow: the tracker calls it at the end of
a run, and `heta-eval-sync` calls it to replay a run directory (into the store the run used,
or into another one), so both log the same things. Metric names are MLflow-safe
(`ndcg@10` -> `ndcg_at_10`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationReport
from heta_eval.tracking.lenient import log_leniently
from heta_eval.tracking.naming import (
    HEADLINE_TAG,
    PRIMARY_MODE_TAG,
    benchmark_dataset,
    headline_metric,
    headline_metrics,
    latency_metrics,
    metric_name,
    run_params,
    slice_metric_name,
    viewer_columns,
)

log = logging.getLogger(__name__)
CASE_TABLE = "case_results.json"
TOP_DOCUMENTS = 5  # distinct retrieved document ids shown per case in the table
REPORT_JSON = "report.json"
# The files of a run directory logged as artifacts, when present.
RUN_FILES = ("report.json", "report.html", "config.resolved.yaml")
# A dataset inserted by a concurrent run: PostgreSQL, SQLite and MySQL's words for it.
DUPLICATE_KEY_MARKERS = (
    "UniqueViolation",
    "duplicate key",
    "UNIQUE constraint failed",
    "Duplicate entry",
)
DATASET_ATTEMPTS = 4


HEADLINE_SECTION = "Headline"


def headline_section(
    headline: str | None, values: Mapping[str, float]
) -> list[tuple[str, float, int]]:
    """The headline score and its CI bounds again as `Headline/ndcg_at_10`, ...: MLflow's
    chart view groups charts by the key's prefix before `/` and orders the groups by name
    (the prefix-less metrics last), so a capitalised `Headline` group comes first."""
    if not headline:
        return []
    names = [headline, f"{headline}.ci_low", f"{headline}.ci_high"]
    return [(f"{HEADLINE_SECTION}/{n}", float(values[n]), 0) for n in names if n in values]


def report_metrics(report: EvaluationReport) -> list[tuple[str, float, int]]:
    """(MLflow metric name, value, step) for everything numeric a run should show."""
    metrics = [(metric_name(k), v, 0) for k, v in sorted(report.score_summary.items())]
    headlines = headline_metrics(report)
    metrics += [(name, value, 0) for name, value in headlines]
    metrics += headline_section(headline_metric(report), dict(headlines))
    for key, detail in sorted(report.score_details.items()):
        for stat in ("scored", "skipped", "undetermined", "failed", "std", "ci_low", "ci_high"):
            value = getattr(detail, stat)
            if value is not None:
                metrics.append((metric_name(f"{key}.{stat}"), float(value), 0))
    for slice_key, summary in sorted(report.score_slices.items()):
        label, _, value = slice_key.partition("=")
        for key, mean in sorted(summary.items()):
            metrics.append((slice_metric_name(label, value, metric_name(key)), mean, 0))
    # A reused result built, cached and resumed nothing in this run: the original run's
    # build times and cache counts are not logged again as this run's.
    reused = report.run.reused_from is not None
    for step, kb in enumerate(report.knowledge_base_manifests):
        if not reused:
            metrics.append(("kb.build_seconds", kb.build_seconds, step))
        metrics.append(("kb.chunks", float(kb.counts.get("chunks", 0)), step))
    if report.knowledge_base_manifests and not reused:
        total = sum(kb.build_seconds for kb in report.knowledge_base_manifests)
        metrics.append(("kb.build_seconds_total", total, 0))
    for mode in report.query_modes:
        for name, value in latency_metrics(report, mode):
            metrics.append((metric_name(f"{mode}.{name}"), value, 0))
    for name, value in sorted(report.run.cache.items()):
        if isinstance(value, int | float) and not reused:
            metrics.append((f"cache.{name}", float(value), 0))
    metrics.append(("cases.resumed", 0.0 if reused else float(report.run.resumed_cases), 0))
    metrics.append(("run.reused", float(reused), 0))
    failed = sum(1 for r in report.case_results if r.error is not None)
    metrics.append(("cases.evaluated", float(len(report.case_results)), 0))
    metrics.append(("cases.failed", float(failed), 0))
    return metrics


NOT_SCORED = "not_scored"  # case table column: `metric: reason` for each metric left empty


def _not_scored(result: Any, metrics: list[str]) -> str:
    """Why a case has empty metric cells: `metric: reason` for each, `; `-separated."""
    reasons = []
    for item in result.scores:
        if item.name in metrics and item.value is None:
            why = item.skipped_reason or ("undetermined" if item.undetermined else "not scored")
            reasons.append(f"{item.name}: {why}")
    return "; ".join(reasons)


def case_table(report: EvaluationReport) -> dict[str, list[Any]]:
    """Per-case results as columns: ids, query, slice labels (`label_<name>`), one column per
    metric, why a metric cell is empty (`not_scored`), latency and how it was measured
    (`latency_batch_size`), error, the answer given and
    the top retrieved documents; every name one that MLflow's table viewer shows
    (`naming.table_column`). The primary query mode's rows come first; a metric that was
    not scored is an empty cell (not the text `null`)."""
    metrics = list(report.run.evaluators)
    labels = sorted({k for r in report.case_results for k in r.labels})
    answers = any(r.answer is not None for r in report.case_results)
    columns: dict[str, list[Any]] = {
        "case_id": [],
        "unit_id": [],
        "query_mode": [],
        "query": [],
        **{f"label_{k}": [] for k in labels},
        **{m: [] for m in metrics},
        NOT_SCORED: [],
        "latency_seconds": [],
        "latency_batch_size": [],
        "error": [],
        **({"answer": []} if answers else {}),
        "top_documents": [],
    }
    primary = report.primary_query_mode
    results = sorted(report.case_results, key=lambda r: r.query_mode != primary)
    for result in results:
        columns["case_id"].append(result.case_id)
        columns["unit_id"].append(result.unit_id)
        columns["query_mode"].append(result.query_mode)
        columns["query"].append(result.query)
        for k in labels:
            columns[f"label_{k}"].append(result.labels.get(k))
        for m in metrics:
            value = result.score(m)
            columns[m].append("" if value is None else value)
        columns[NOT_SCORED].append(_not_scored(result, metrics))
        columns["latency_seconds"].append(result.latency_seconds)
        columns["latency_batch_size"].append(result.latency_batch_size)
        columns["error"].append(
            None if result.error is None else f"{result.error.error_type}: {result.error.message}"
        )
        if answers:
            columns["answer"].append(result.answer)
        top = dict.fromkeys(item.document_id for item in result.retrieved)
        columns["top_documents"].append(" ".join(list(top)[:TOP_DOCUMENTS]))
    return viewer_columns(columns)


def report_tags(report: EvaluationReport) -> dict[str, str]:
    """The tags only the report knows: the primary query mode and the headline metric."""
    return {
        PRIMARY_MODE_TAG: report.primary_query_mode or "",
        HEADLINE_TAG: headline_metric(report) or "",
    }


def log_report(
    client: Any,
    run_id: str,
    report: EvaluationReport,
    files: Iterable[Path],
    case_table_logged: bool = True,
) -> list[str]:
    """Log `report` (metrics, params, tags, dataset input, case table) and `files` to the
    run; the items MLflow refused (the rest is logged). Safe to repeat: a metric with the
    same key, value, time and step is kept once, a param only the run lacks is sent, the
    case table and the files replace what a first attempt left."""
    from mlflow.entities import DatasetInput, InputTag, Metric, Param, RunTag

    stamp = int(report.finished_at.timestamp() * 1000)
    metrics = [Metric(k, float(v), stamp, step) for k, v, step in report_metrics(report)]
    existing = client.get_run(run_id).data.params
    params = [Param(k, v) for k, v in run_params(report).items() if k not in existing]
    tags = [RunTag(k, v) for k, v in report_tags(report).items()]
    refused = log_leniently(client, run_id, metrics=metrics, params=params, tags=tags)
    dataset = DatasetInput(
        benchmark_dataset(report), tags=[InputTag("mlflow.data.context", "evaluation")]
    )
    _log_dataset(client, run_id, dataset)
    names = {a.path for a in client.list_artifacts(run_id)}
    if case_table_logged and report.case_results and CASE_TABLE not in names:
        # log_table appends to an existing table: a repeat keeps the first one.
        client.log_table(run_id, data=case_table(report), artifact_file=CASE_TABLE)
    for path in files:
        if Path(path).is_file():
            client.log_artifact(run_id, str(path))  # replaces a file of the same name
    return refused


def run_files(directory: Path) -> list[Path]:
    """The files of a run directory that MLflow holds as artifacts."""
    return [Path(directory) / name for name in RUN_FILES if (Path(directory) / name).is_file()]


def log_params_and_tags(
    client: Any, run_id: str, params: Mapping[str, str], tags: Mapping[str, str]
) -> list[str]:
    """Log the params the run lacks (a param never changes once logged) and set `tags`."""
    from mlflow.entities import Param, RunTag

    existing = client.get_run(run_id).data.params
    new = [Param(k, v) for k, v in params.items() if k not in existing]
    return log_leniently(client, run_id, params=new, tags=[RunTag(k, v) for k, v in tags.items()])


def _log_dataset(client: Any, run_id: str, dataset: Any) -> None:
    """Log the run's dataset input. MLflow stores a dataset once per experiment, found or
    inserted by each request: runs of a parallel sweep logging the same benchmark at the
    same moment can both insert it, and the second fails on the unique key. The dataset
    then exists, so that request is made again (a few times, briefly)."""
    for attempt in range(DATASET_ATTEMPTS):
        try:
            client.log_inputs(run_id, datasets=[dataset])
            return
        except Exception as exc:
            text = str(exc)
            if attempt + 1 == DATASET_ATTEMPTS or not any(
                marker in text for marker in DUPLICATE_KEY_MARKERS
            ):
                raise
            log.debug("dataset input logged concurrently by another run (%s); again", text)
            time.sleep(0.2 * (attempt + 1))
