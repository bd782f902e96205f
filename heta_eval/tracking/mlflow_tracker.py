"""MLflow tracking: params, tags, metrics, the per-case table and artifacts of a run."""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationReport
from heta_eval.tracking.naming import (
    PRIMARY_MODE_TAG,
    benchmark_dataset,
    flat_params,
    headline_metrics,
    metric_name,
    run_params,
)

PARAMS_PER_BATCH = 100  # MLflow's per-request limits
METRICS_PER_BATCH = 1000
CASE_TABLE = "case_results.json"
TOP_DOCUMENTS = 5  # distinct retrieved document ids shown per case in the table


def default_tracking_uri(root: Path) -> str:
    """SQLite store `{root}/mlflow.db`, always absolute (Hydra may change directories)."""
    return f"sqlite:///{(root / 'mlflow.db').resolve()}"


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _percentile(values: Sequence[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def report_metrics(report: EvaluationReport) -> list[tuple[str, float, int]]:
    """(MLflow metric name, value, step) for everything numeric a run should show."""
    metrics = [(metric_name(k), v, 0) for k, v in sorted(report.score_summary.items())]
    metrics += [(name, value, 0) for name, value in headline_metrics(report)]
    for key, detail in sorted(report.score_details.items()):
        for stat in ("scored", "skipped", "undetermined", "failed", "std", "ci_low", "ci_high"):
            value = getattr(detail, stat)
            if value is not None:
                metrics.append((metric_name(f"{key}.{stat}"), float(value), 0))
    for slice_key, summary in sorted(report.score_slices.items()):
        label, _, value = slice_key.partition("=")
        for key, mean in sorted(summary.items()):
            metrics.append((metric_name(f"slice/{label}/{value}/{key}"), mean, 0))
    for step, kb in enumerate(report.knowledge_base_manifests):
        metrics.append(("kb.build_seconds", kb.build_seconds, step))
        metrics.append(("kb.chunks", float(kb.counts.get("chunks", 0)), step))
    if report.knowledge_base_manifests:
        total = sum(kb.build_seconds for kb in report.knowledge_base_manifests)
        metrics.append(("kb.build_seconds_total", total, 0))
    for mode in report.query_modes:
        latencies = sorted(
            r.latency_seconds
            for r in report.case_results
            if r.query_mode == mode and r.latency_seconds is not None
        )
        if latencies:
            metrics.append(
                (metric_name(f"{mode}.latency_p50_seconds"), _percentile(latencies, 50), 0)
            )
            metrics.append(
                (metric_name(f"{mode}.latency_p95_seconds"), _percentile(latencies, 95), 0)
            )
    for name, value in sorted((report.metadata.get("cache") or {}).items()):
        if isinstance(value, int | float):
            metrics.append((f"cache.{name}", float(value), 0))
    metrics.append(("cases.resumed", float(report.metadata.get("resumed_cases", 0)), 0))
    failed = sum(1 for r in report.case_results if r.error is not None)
    metrics.append(("cases.evaluated", float(len(report.case_results)), 0))
    metrics.append(("cases.failed", float(failed), 0))
    return metrics


def case_table(report: EvaluationReport) -> dict[str, list[Any]]:
    """Per-case results as columns: ids, query, slice labels, one column per metric,
    latency, error, the answer given and the top retrieved documents."""
    metrics = list(report.metadata.get("evaluators", ()))
    labels = sorted({k for r in report.case_results for k in r.labels})
    answers = any(r.answer is not None for r in report.case_results)
    columns: dict[str, list[Any]] = {
        "case_id": [],
        "unit_id": [],
        "query_mode": [],
        "query": [],
        **{f"label.{k}": [] for k in labels},
        **{m: [] for m in metrics},
        "latency_seconds": [],
        "error": [],
        **({"answer": []} if answers else {}),
        "top_documents": [],
    }
    for result in report.case_results:
        columns["case_id"].append(result.case_id)
        columns["unit_id"].append(result.unit_id)
        columns["query_mode"].append(result.query_mode)
        columns["query"].append(result.query)
        for k in labels:
            columns[f"label.{k}"].append(result.labels.get(k))
        for m in metrics:
            columns[m].append(result.score(m))
        columns["latency_seconds"].append(result.latency_seconds)
        columns["error"].append(
            None if result.error is None else f"{result.error.error_type}: {result.error.message}"
        )
        if answers:
            columns["answer"].append(result.answer)
        top = dict.fromkeys(item.document_id for item in result.retrieved)
        columns["top_documents"].append(" ".join(list(top)[:TOP_DOCUMENTS]))
    return columns


class MlflowTracker:
    """Logs each run to MLflow, in batches, with MLflow imported only when a run starts.

    `uri` (or the MLFLOW_TRACKING_URI environment variable) points at a tracking server or
    store; without either, a SQLite store `{root}/mlflow.db` with artifacts in
    `{root}/mlruns` is used. Metric names are MLflow-safe (`ndcg@10` → `ndcg_at_10`).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] = "outputs",
        uri: str | None = None,
        experiment: str = "heta_eval",
        artifact_location: str | None = None,
        run_name: str | None = None,
        log_case_table: bool = True,
    ) -> None:
        self.root = Path(root).expanduser().resolve()
        self.uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(self.root)
        self.experiment = experiment
        if artifact_location is None and self.uri.startswith("sqlite:"):
            artifact_location = (self.root / "mlruns").as_uri()
        self.artifact_location = artifact_location
        self.run_name = run_name
        self.log_case_table = log_case_table
        self.run_id: str | None = None
        self._client: Any = None

    @property
    def client(self) -> Any:
        """The MlflowClient for this tracker's URI (created on first use)."""
        if self._client is None:
            from mlflow import MlflowClient

            if self.uri.startswith("sqlite:"):
                self.root.mkdir(parents=True, exist_ok=True)
            self._client = MlflowClient(tracking_uri=self.uri)
        return self._client

    def experiment_id(self) -> str:
        """Id of the configured experiment, created (with its artifact location) if needed."""
        found = self.client.get_experiment_by_name(self.experiment)
        if found is not None:
            return found.experiment_id
        try:
            return self.client.create_experiment(
                self.experiment, artifact_location=self.artifact_location
            )
        except Exception:
            # Another job of a parallel sweep may have created it in the meantime.
            found = self.client.get_experiment_by_name(self.experiment)
            if found is None:
                raise
            return found.experiment_id

    def start(
        self,
        *,
        run_name: str,
        config: Mapping[str, Any],
        tags: Mapping[str, str],
        parent_run_id: str | None = None,
    ) -> None:
        from mlflow.entities import Param

        all_tags = dict(tags)
        if parent_run_id:
            all_tags["mlflow.parentRunId"] = parent_run_id
        run = self.client.create_run(
            self.experiment_id(), run_name=self.run_name or run_name, tags=all_tags
        )
        self.run_id = run.info.run_id
        params = [Param(k, v) for k, v in flat_params(config).items()]
        for batch in _chunks(params, PARAMS_PER_BATCH):
            self.client.log_batch(self.run_id, params=list(batch))

    def resume(self, run_id: str) -> bool:
        """Reopen the run an interrupted evaluation started (same run, not a second one)."""
        try:
            run = self.client.get_run(run_id)
        except Exception:
            return False
        if run.info.lifecycle_stage != "active":
            return False
        self.client.update_run(run_id, status="RUNNING")
        self.run_id = run_id
        return True

    def log_report(self, report: EvaluationReport, artifacts: Mapping[str, Path]) -> None:
        """Log the report's metrics, what was evaluated (params, tag, dataset input), the
        per-case table and the artifacts (report.json, report.html, the resolved config)."""
        from mlflow.entities import DatasetInput, InputTag, Metric, Param, RunTag

        if self.run_id is None:
            raise RuntimeError("MlflowTracker.log_report called before start")
        stamp = int(report.finished_at.timestamp() * 1000)
        metrics = [Metric(k, float(v), stamp, step) for k, v, step in report_metrics(report)]
        for batch in _chunks(metrics, METRICS_PER_BATCH):
            self.client.log_batch(self.run_id, metrics=list(batch))
        params = [Param(k, v) for k, v in run_params(report).items()]
        tags = [RunTag(PRIMARY_MODE_TAG, report.primary_query_mode or "")]
        self.client.log_batch(self.run_id, params=params, tags=tags)
        dataset = DatasetInput(
            benchmark_dataset(report), tags=[InputTag("mlflow.data.context", "evaluation")]
        )
        self.client.log_inputs(self.run_id, datasets=[dataset])
        if self.log_case_table and report.case_results:
            self.client.log_table(self.run_id, data=case_table(report), artifact_file=CASE_TABLE)
        for path in artifacts.values():
            if Path(path).exists():
                self.client.log_artifact(self.run_id, str(path))

    def end(self, status: str = "FINISHED") -> None:
        if self.run_id is not None:
            self.client.set_terminated(self.run_id, status=status)

    def describe(self) -> str:
        if self.uri.startswith("sqlite:"):
            return f"mlflow ui --backend-store-uri {self.uri}  (run {self.run_id})"
        return f"{self.uri.rstrip('/')}/#/experiments/{self.experiment_id()}/runs/{self.run_id}"
