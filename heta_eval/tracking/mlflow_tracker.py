"""MLflow tracking: params, tags, metrics, the per-case table and artifacts of a run."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationReport
from heta_eval.tracking.access import access_problem, refusal_status
from heta_eval.tracking.lenient import REJECTED_TAG, log_leniently
from heta_eval.tracking.naming import (
    HEADLINE_TAG,
    PRIMARY_MODE_TAG,
    benchmark_dataset,
    headline_metric,
    headline_metrics,
    latency_metrics,
    logged_params,
    metric_name,
    run_params,
    slice_metric_name,
    viewer_columns,
)
from heta_eval.tracking.outbox import LOCAL_PREFIX, Outbox, OutboxEntry

log = logging.getLogger(__name__)
CASE_TABLE = "case_results.json"
TOP_DOCUMENTS = 5  # distinct retrieved document ids shown per case in the table
# A dataset inserted by a concurrent run: PostgreSQL, SQLite and MySQL's words for it.
DUPLICATE_KEY_MARKERS = (
    "UniqueViolation",
    "duplicate key",
    "UNIQUE constraint failed",
    "Duplicate entry",
)
DATASET_ATTEMPTS = 4
# MLflow reads these at each request; the tracking config bounds them (MLflow's defaults
# retry a dead server for minutes).
HTTP_SETTINGS = {
    "http_max_retries": "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
    "http_timeout_seconds": "MLFLOW_HTTP_REQUEST_TIMEOUT",
    "http_backoff_factor": "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR",
}


DATABASE_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")


def is_database_uri(uri: str) -> bool:
    """Whether `uri` is a database store MLflow opens itself (SQLite, PostgreSQL, MySQL,
    SQL Server, with or without a `+driver`), not a tracking server or a file store."""
    return uri.split(":", 1)[0].split("+", 1)[0].lower() in DATABASE_SCHEMES


def default_tracking_uri(root: Path) -> str:
    """SQLite store `{root}/mlflow.db`, always absolute (Hydra may change directories)."""
    return f"sqlite:///{(root / 'mlflow.db').resolve()}"


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


def report_for_logging(report: EvaluationReport) -> EvaluationReport:
    """`report` as `log_report` reads it, to send to a tracker process: each case's
    retrieved items cut to those up to its TOP_DOCUMENTS-th distinct document (what the
    case table shows). Everything else is kept; the whole report goes to MLflow as the
    report.json file. At 1M documents x 10k queries the whole report is 150 MB of JSON,
    a million retrieved items that the tracker process took 10-19 s to read back, only to
    show five document ids a case."""
    results = []
    for result in report.case_results:
        items = result.retrieved
        seen: set[str] = set()
        for position, item in enumerate(items):
            seen.add(item.document_id)
            if len(seen) > TOP_DOCUMENTS:
                items = items[:position]
                break
        results.append(
            result if items is result.retrieved else result.model_copy(update={"retrieved": items})
        )
    return report.model_copy(update={"case_results": tuple(results)})


class MlflowTracker:
    """Logs each run to MLflow, in batches, with MLflow imported only when a run starts.

    `uri` (or the MLFLOW_TRACKING_URI environment variable) points at a tracking server or
    store; without either, a SQLite store `{root}/mlflow.db` with artifacts in
    `{root}/mlruns` is used. Metric names are MLflow-safe (`ndcg@10` → `ndcg_at_10`).

    When the tracking backend fails (a server that is down at the start or dies mid-run),
    the run goes on: everything the tracker would send is kept in the outbox under
    `{root}/tracking_outbox` (`outbox: true`), a warning names the sync command, and
    `heta-eval-sync` uploads it later. `http_*` bound MLflow's HTTP retries and timeouts
    (null: MLflow's own, or its environment variables). `service` (with
    `service_idle_seconds`) hands the run's tracking to the long-lived tracking service
    instead of a worker process of its own (`heta_eval.run.service_link`); this class only
    keeps them for the run's process to read.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] = "outputs",
        uri: str | None = None,
        experiment: str = "heta_eval",
        artifact_location: str | None = None,
        run_name: str | None = None,
        log_case_table: bool = True,
        outbox: bool = True,
        http_max_retries: int | None = 2,
        http_timeout_seconds: int | None = 10,
        http_backoff_factor: int | None = 1,
        service: bool = False,
        service_idle_seconds: float = 300.0,
    ) -> None:
        self.service = service
        self.service_idle_seconds = service_idle_seconds
        self.root = Path(root).expanduser().resolve()
        self.uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(self.root)
        self.experiment = experiment
        if artifact_location is None and is_database_uri(self.uri):
            # MLflow's default for a database store is ./mlruns of whatever directory the
            # process starts in; keep artifacts with the runs' other outputs instead.
            artifact_location = (self.root / "mlruns").as_uri()
        self.artifact_location = artifact_location
        self.run_name = run_name
        self.log_case_table = log_case_table
        self.run_id: str | None = None
        self._client: Any = None
        self._lock = threading.Lock()
        self._experiment_id: str | None = None
        self.use_outbox = outbox
        self._entry: OutboxEntry | None = None  # set once the backend failed
        self._started: dict[str, Any] = {}
        self._silent: Exception | None = None  # why the server did not answer, if it did not
        self._probed = False
        self._rejected: list[str] = []  # items MLflow would not take (the rest was logged)
        self._reported = 0  # of those, already said
        self._headline: str | None = None  # the runs table link sorts by it
        bounds = (http_max_retries, http_timeout_seconds, http_backoff_factor)
        for value, variable in zip(bounds, HTTP_SETTINGS.values(), strict=True):
            if value is not None:
                if int(value) < 0:
                    raise ValueError(f"{variable.lower()} must be >= 0, got {value}")
                os.environ[variable] = str(int(value))

    @property
    def client(self) -> Any:
        """The MlflowClient for this tracker's URI (created on first use)."""
        with self._lock:
            if self._client is None:
                from heta_eval.tracking.sqlite_store import open_client

                if self.uri.startswith("sqlite:"):
                    self.root.mkdir(parents=True, exist_ok=True)
                self._client = open_client(self.uri)
            return self._client

    @property
    def offline(self) -> bool:
        """Whether this run's tracking data goes to the outbox (`heta-eval-sync` uploads it
        later) rather than to the tracking backend, which failed or could not be reached."""
        return self._entry is not None

    def _check_server(self) -> None:
        """Raise, once and for all, when the tracking server (an http(s) URI) does not
        answer one request within MLflow's request timeout: a server that accepts
        connections and never answers then costs that timeout (10 s by default), not each
        request's timeout times its retries; the run's tracking goes to the outbox."""
        if not self._probed and self.uri.startswith(("http://", "https://")):
            from heta_eval.tracking.http_bounds import no_answer, request_timeout

            self._probed = True
            self._silent = no_answer(self.uri, request_timeout())
        if self._silent is not None:
            raise self._silent

    def connect(self) -> None:
        """Import MLflow and, for a store that exists, open it and find the experiment: most
        of a small run's tracking cost, done while the benchmark loads. A new SQLite store
        is created only by `start` (a run refused for bad data leaves no store behind); a
        failure is left for `start` too, which sends the run to the outbox."""
        try:
            import mlflow.tracking  # noqa: F401  (the import is the slow part)

            store = Path(self.uri.removeprefix("sqlite:///"))
            if self.uri.startswith("sqlite:///") and not store.exists():
                return
            self._check_server()
            self.experiment_id()
        except Exception as exc:
            log.debug("MLflow not ready yet (%s); start() will try again", exc)

    def experiment_id(self) -> str:
        """Id of the configured experiment, created (with its artifact location) if needed."""
        if self._experiment_id is not None:
            return self._experiment_id
        found = self.client.get_experiment_by_name(self.experiment)
        if found is not None:
            self._experiment_id = str(found.experiment_id)
            return self._experiment_id
        try:
            created = self.client.create_experiment(
                self.experiment, artifact_location=self.artifact_location
            )
        except Exception:
            # Another job of a parallel sweep may have created it in the meantime.
            found = self.client.get_experiment_by_name(self.experiment)
            if found is None:
                raise
            created = found.experiment_id
        self._experiment_id = str(created)
        return self._experiment_id

    def start(
        self,
        *,
        run_name: str,
        config: Mapping[str, Any],
        tags: Mapping[str, str],
        parent_run_id: str | None = None,
        start_time: float | None = None,
    ) -> None:
        from mlflow.entities import Param

        from heta_eval.tracking.run_context import benchmark_of, context_tags, describe_experiment

        all_tags = context_tags(tags)  # as mlflow.start_run would: user, source, git
        if parent_run_id:
            all_tags["mlflow.parentRunId"] = parent_run_id
        flat, where = logged_params(config)  # the run's directory is a tag
        all_tags.update(where)
        self._started = {"run_name": self.run_name or run_name, "tags": all_tags, "params": flat}
        try:
            self._check_server()
            # The evaluation's start, not the moment MLflow got the request (a worker that
            # imports MLflow may create the run seconds after the evaluation began).
            run = self.client.create_run(
                self.experiment_id(),
                start_time=None if start_time is None else int(start_time * 1000),
                run_name=self.run_name or run_name,
                tags=all_tags,
            )
            self.run_id = run.info.run_id
            from heta_eval.tracking.stores import remember_store

            remember_store(self.uri)  # for heta-eval-compare and heta-eval-runs to find
            benchmark = benchmark_of(all_tags)
            if benchmark:
                describe_experiment(self.client, self.experiment_id(), benchmark)
            params = [Param(k, v) for k, v in flat.items()]
            self._rejected += log_leniently(self.client, self.run_id, params=params)
            self._report_rejected()
        except Exception as exc:
            self._go_offline(exc)

    def resume(self, run_id: str) -> bool:
        """Reopen the run an interrupted evaluation started (same run, not a second one).

        A run whose data is in the outbox (it started or went on while the backend was
        down) goes on in the outbox; a server that cannot be reached sends it there too."""
        if self.use_outbox:
            entry = Outbox(self.root).find(run_id)
            if entry is not None:
                self._entry, self.run_id = entry, entry.local_run_id
                log.warning("run %s goes on in the tracking outbox %s", run_id, self._where())
                return True
            if run_id.startswith(LOCAL_PREFIX):
                return False
        try:
            self._check_server()
            run = self.client.get_run(run_id)
        except Exception as exc:
            if not self.use_outbox or getattr(exc, "error_code", "") == "RESOURCE_DOES_NOT_EXIST":
                return False
            self.run_id = run_id
            self._go_offline(exc)
            return True
        if run.info.lifecycle_stage != "active":
            return False
        self.run_id = run_id
        try:
            self.client.update_run(run_id, status="RUNNING")
        except Exception as exc:
            self._go_offline(exc)
        return True

    def log_report(self, report: EvaluationReport, artifacts: Mapping[str, Path]) -> None:
        """Log the report's metrics, what was evaluated (params, tag, dataset input), the
        per-case table and the artifacts (report.json, report.html, the resolved config)."""
        from mlflow.entities import DatasetInput, InputTag, Metric, Param, RunTag

        if self.run_id is None:
            raise RuntimeError("MlflowTracker.log_report called before start")
        stamp = int(report.finished_at.timestamp() * 1000)
        metrics = [Metric(k, float(v), stamp, step) for k, v, step in report_metrics(report)]
        params = run_params(report)
        tags = {
            PRIMARY_MODE_TAG: report.primary_query_mode or "",
            HEADLINE_TAG: headline_metric(report) or "",
        }
        self._headline = tags[HEADLINE_TAG] or None
        if self._entry is None:
            try:
                self._rejected += log_leniently(
                    self.client,
                    self.run_id,
                    metrics=metrics,
                    params=[Param(k, v) for k, v in params.items()],
                    tags=[RunTag(k, v) for k, v in tags.items()],
                )
                self._report_rejected()
                dataset = DatasetInput(
                    benchmark_dataset(report),
                    tags=[InputTag("mlflow.data.context", "evaluation")],
                )
                self._log_dataset(dataset)
                if self.log_case_table and report.case_results:
                    self.client.log_table(
                        self.run_id, data=case_table(report), artifact_file=CASE_TABLE
                    )
                for path in artifacts.values():
                    if Path(path).exists():
                        self.client.log_artifact(self.run_id, str(path))
                return
            except Exception as exc:
                self._go_offline(exc)
        # Everything again, even what reached the server: a sync sends each item once.
        # (The dataset input is not kept: the benchmark is in the tags and params.)
        self._keep_report(metrics, report, artifacts, params, tags)

    def log_artifact(self, path: Path) -> None:
        """Log one more file to the run (a sweep job's report.html, written after its
        report was logged); kept in the outbox when the run's data is there. A file the
        backend refuses is said in the log (the run itself is complete without it)."""
        if self.run_id is None:
            raise RuntimeError("MlflowTracker.log_artifact called before start")
        if self._entry is None:
            try:
                self.client.log_artifact(self.run_id, str(path))
            except Exception as exc:
                log.warning(
                    "%s not logged to MLflow run %s (%s: %s); it stays in the run directory",
                    path,
                    self.run_id,
                    type(exc).__name__,
                    str(exc).splitlines()[0][:300] if str(exc) else "",
                )
            return
        kept = Outbox(self.root).add_file(self._entry, Path(path))
        self._update_entry(artifacts=[*self._entry.artifacts, kept])

    def set_headline(self, name: str) -> None:
        """The score the runs table link of `describe` sorts by (`log_report` sets it too)."""
        self._headline = name

    def _log_dataset(self, dataset: Any) -> None:
        """Log the run's dataset input. MLflow stores a dataset once per experiment, found or
        inserted by each request: runs of a parallel sweep logging the same benchmark at
        the same moment can both insert it, and the second fails on the unique key. The
        dataset then exists, so that request is made again (a few times, briefly)."""
        for attempt in range(DATASET_ATTEMPTS):
            try:
                self.client.log_inputs(self.run_id, datasets=[dataset])
                return
            except Exception as exc:
                text = str(exc)
                if attempt + 1 == DATASET_ATTEMPTS or not any(
                    marker in text for marker in DUPLICATE_KEY_MARKERS
                ):
                    raise
                log.debug("dataset input logged concurrently by another run (%s); again", text)
                time.sleep(0.2 * (attempt + 1))

    def _report_rejected(self) -> None:
        """Say which items MLflow could not take (the rest was logged), in the log and on
        the run (tag `heta_eval.tracking.rejected`)."""
        new = self._rejected[self._reported :]
        if not new:
            return
        from mlflow.entities import RunTag

        self._reported = len(self._rejected)
        log.warning(
            "MLflow refused %d item(s) of this run, the rest was logged: %s",
            len(new),
            "; ".join(new[:20]) + (f" (and {len(new) - 20} more)" if len(new) > 20 else ""),
        )
        shown = "; ".join(self._rejected[:20])
        more = f" (and {len(self._rejected) - 20} more)" if len(self._rejected) > 20 else ""
        tag = RunTag(REJECTED_TAG, f"{len(self._rejected)} item(s): {shown}{more}"[:5000])
        self.client.log_batch(self.run_id, tags=[tag])

    def end(self, status: str = "FINISHED") -> None:
        if self.run_id is not None and self._entry is None:
            try:
                self.client.set_terminated(self.run_id, status=status)
                return
            except Exception as exc:
                self._go_offline(exc)
        if self._entry is not None:
            self._update_entry(status=status)
            log.warning(
                "MLflow tracking data of this run is in %s; upload it with: %s",
                self._where(),
                self.sync_command(),
            )

    def describe(self) -> str:
        if self._entry is not None:
            refused = refusal_status(RuntimeError(self._entry.reason or ""))
            why = self._entry.reason if refused else "MLflow unreachable"
            return (
                f"NOT UPLOADED ({why}): kept in {self._where()}; "
                f"upload with `{self.sync_command()}`"
            )
        if (self.run_id or "").startswith(LOCAL_PREFIX):
            return f"not uploaded yet (tracking outbox); upload with `{self.sync_command()}`"
        from heta_eval.tracking.ui_links import open_command, run_url, runs_table_url, ui_base

        command = open_command(self.uri)
        try:
            experiment = self.experiment_id()
        except Exception:  # the server went away after the run; the run id still says it
            return f"{self.uri.rstrip('/')} (run {self.run_id})"
        base = ui_base(self.uri)
        first = (
            f"{command}  (run {self.run_id})"
            if command
            else run_url(base, experiment, str(self.run_id))
        )
        # The runs table itself (MLflow 3 opens an experiment on its GenAI overview).
        return f"{first}\nruns table: {runs_table_url(base, experiment, self._headline)}"

    # -- the outbox ----------------------------------------------------------------------

    def sync_command(self) -> str:
        """The command that uploads this root's outbox."""
        return f"heta-eval-sync --root {self.root}"

    def _where(self) -> Path:
        assert self._entry is not None
        return Outbox(self.root).entry_dir(self._entry)

    def _go_offline(self, exc: BaseException) -> None:
        """The backend failed: keep this run's data in the outbox from now on."""
        if not self.use_outbox:
            raise exc
        if self._entry is not None:
            return
        problem = access_problem(self.uri, exc, self.experiment)
        reason = problem or f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        server_run = None if (self.run_id or "").startswith(LOCAL_PREFIX) else self.run_id
        self._entry = Outbox(self.root).new_entry(
            uri=self.uri,
            experiment=self.experiment,
            artifact_location=self.artifact_location,
            run_name=str(self._started.get("run_name", "")),
            tags=dict(self._started.get("tags", {})),
            params=dict(self._started.get("params", {})),
            server_run_id=server_run,
            reason=reason,
        )
        self.run_id = self._entry.local_run_id
        if problem:
            log.warning(
                "%s. The evaluation goes on and keeps its tracking data in %s; upload it once "
                "you have access with: %s",
                problem,
                self._where(),
                self.sync_command(),
            )
            return
        log.warning(
            "MLflow tracking at %s failed (%s); the evaluation goes on and keeps its tracking "
            "data in %s; upload it when the server is back with: %s",
            self.uri,
            reason,
            self._where(),
            self.sync_command(),
        )

    def _update_entry(self, **fields: Any) -> None:
        assert self._entry is not None
        self._entry = self._entry.model_copy(update=fields)
        Outbox(self.root).save(self._entry)

    def _keep_report(
        self,
        metrics: Sequence[Any],
        report: EvaluationReport,
        artifacts: Mapping[str, Path],
        params: Mapping[str, str],
        tags: Mapping[str, str],
    ) -> None:
        assert self._entry is not None
        outbox = Outbox(self.root)
        table = None
        if self.log_case_table and report.case_results:
            table = outbox.add_json(self._entry, "case_table.columns.json", case_table(report))
        kept = [
            outbox.add_file(self._entry, Path(path))
            for path in artifacts.values()
            if Path(path).exists()
        ]
        self._update_entry(
            params={**self._entry.params, **params},
            tags={**self._entry.tags, **tags},
            metrics=[(m.key, m.value, m.timestamp, m.step) for m in metrics],
            table=table,
            table_name=CASE_TABLE,
            artifacts=kept,
        )
