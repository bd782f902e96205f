"""The MLflow tracker of a run: the MLflow run created when the run starts (a rerun of a
killed run continues it), the run directory logged into it when the run ends.

The run directory is the source of truth and MLflow its projection. What the tracker sends
is written to the directory first (`tracking.json`: name, tags, params; report.json and the
files beside it), so a tracking backend that fails at any point loses nothing: the
directory is marked unsynced, the run goes on, and `heta-eval-sync` replays it later.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from heta_eval.protocols import BaseTracker
from heta_eval.records import EvaluationReport
from heta_eval.redaction import mask_url_credentials
from heta_eval.tracking.access import access_problem
from heta_eval.tracking.http_bounds import no_answer, request_timeout
from heta_eval.tracking.lenient import REJECTED_TAG
from heta_eval.tracking.naming import HEADLINE_TAG, RUN_DIR_TAG, logged_params
from heta_eval.tracking.projection import log_params_and_tags, log_report, report_tags, run_files
from heta_eval.tracking.run_context import benchmark_of, context_tags, describe_experiment
from heta_eval.tracking.run_record import TrackingRecord, read_record, write_record
from heta_eval.tracking.sqlite_store import open_client
from heta_eval.tracking.stores import remember_store
from heta_eval.tracking.ui_links import open_command, run_url, runs_table_url, ui_base

log = logging.getLogger(__name__)
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


class MlflowTracker(BaseTracker):
    """Logs each run to MLflow, in batches, with MLflow imported only when a run starts.

    `uri` (or the MLFLOW_TRACKING_URI environment variable) points at a tracking server or
    store; without either, a SQLite store `{root}/mlflow.db` with artifacts in
    `{root}/mlruns` is used. `http_*` bound MLflow's HTTP retries and timeouts (null:
    MLflow's own, or its environment variables). When the backend fails, the first failure
    marks the run directory unsynced (`tracking.json`) and nothing more is sent: the run
    ends without waiting for a server that is gone, and `heta-eval-sync --root ROOT`
    replays the directory.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] = "outputs",
        uri: str | None = None,
        experiment: str = "heta_eval",
        artifact_location: str | None = None,
        run_name: str | None = None,
        log_case_table: bool = True,
        http_max_retries: int | None = 2,
        http_timeout_seconds: int | None = 10,
        http_backoff_factor: int | None = 1,
    ) -> None:
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
        self._run_dir: Path | None = None
        self._record: TrackingRecord | None = None
        self._failure: str | None = None  # why the backend failed, once it did
        self._silent: Exception | None = None  # why the server did not answer, if it did not
        self._probed = False
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
                if self.uri.startswith("sqlite:"):
                    self.root.mkdir(parents=True, exist_ok=True)
                self._client = open_client(self.uri)
            return self._client

    @property
    def offline(self) -> bool:
        """Whether the backend failed for this run (its directory is marked unsynced)."""
        return self._failure is not None

    def _check_server(self) -> None:
        """Raise, once and for all, when the tracking server (an http(s) URI) does not
        answer one request within MLflow's request timeout: a server that accepts
        connections and never answers then costs that timeout (10 s by default), not each
        request's timeout times its retries."""
        if not self._probed and self.uri.startswith(("http://", "https://")):
            self._probed = True
            self._silent = no_answer(self.uri, request_timeout())
        if self._silent is not None:
            raise self._silent

    def connect(self) -> None:
        """Import MLflow and, for a store that exists, open it and find the experiment: most
        of a small run's tracking cost, done in a thread while the benchmark loads. A new
        SQLite store is created only by `start` (a run refused for bad data leaves no store
        behind); a failure is left for `start` too."""
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
        run_dir: Path,
        parent_run_id: str | None = None,
        sweep_dir: Path | None = None,
        start_time: float | None = None,
    ) -> None:
        """Write the run's record into `run_dir` and create its MLflow run (`start_time`:
        when the evaluation began, seconds since the epoch)."""

        all_tags = context_tags(tags)  # as mlflow.start_run would: user, source, git
        if parent_run_id:
            all_tags["mlflow.parentRunId"] = parent_run_id
        flat, where = logged_params(config)  # the run's directory is a tag
        all_tags.update(where)
        self._run_dir = Path(run_dir)
        self._record = self._save(
            TrackingRecord(
                uri=mask_url_credentials(self.uri),
                experiment=self.experiment,
                artifact_location=self.artifact_location,
                run_name=self.run_name or run_name,
                tags=all_tags,
                params=flat,
                sweep_dir=None if sweep_dir is None else str(Path(sweep_dir).resolve()),
                start_time=None if start_time is None else int(start_time * 1000),
            )
        )
        try:
            self._check_server()
            run = self.client.create_run(
                self.experiment_id(),
                start_time=self._record.start_time,
                run_name=self._record.run_name,
                tags=all_tags,
            )
            self.run_id = run.info.run_id
            self._record = self._save(self._record.model_copy(update={"run_id": self.run_id}))

            remember_store(self.uri)  # for heta-eval-compare and heta-eval-runs to find
            benchmark = benchmark_of(all_tags)
            if benchmark:
                describe_experiment(self.client, self.experiment_id(), benchmark)
            self._said_refused(log_params_and_tags(self.client, self.run_id, flat, {}))
        except Exception as exc:
            self._went_offline(exc)

    def resume(self, run_id: str, run_dir: Path) -> bool:
        """Continue the MLflow run an interrupted attempt started (same run, not a second):
        its record is copied into this attempt's `run_dir`. False when the run cannot be
        found or the backend cannot be reached (a new run is started)."""
        previous = self._find_record(run_id)
        try:
            self._check_server()
            run = self.client.get_run(run_id)
            if run.info.lifecycle_stage != "active":
                return False
            self.client.update_run(run_id, status="RUNNING")
        except Exception as exc:
            log.debug("the interrupted attempt's MLflow run %s is not continued: %s", run_id, exc)
            return False
        self.run_id = run_id
        self._run_dir = Path(run_dir)
        info = run.info
        record = previous or TrackingRecord(
            uri=mask_url_credentials(self.uri),
            experiment=self.experiment,
            artifact_location=self.artifact_location,
            run_name=info.run_name or "",
            tags=dict(run.data.tags),
            params=dict(run.data.params),
            start_time=info.start_time,
        )

        # The report of this attempt is in its own run directory.
        tags = {**record.tags, RUN_DIR_TAG: str(self._run_dir)}
        self._record = self._save(
            record.model_copy(
                update={"run_id": run_id, "status": None, "synced": False, "tags": tags}
            )
        )
        try:
            self.client.set_tag(run_id, RUN_DIR_TAG, str(self._run_dir))
        except Exception as exc:
            self._went_offline(exc)
        return True

    def finish(self, report: EvaluationReport, status: str = "FINISHED") -> None:
        """Log the run directory (the report and the files beside it) and end the run with
        `status`. A backend failure marks the directory unsynced instead of raising."""
        self._headline = self._headline_of(report) or self._headline
        if self._record is None:
            raise RuntimeError("MlflowTracker.finish called before start")
        self._record = self._save(self._record.model_copy(update={"status": status}))
        if self.run_id is None or self.offline:
            self._say_unsynced()
            return
        try:
            files = run_files(self._run_dir) if self._run_dir is not None else []
            refused = log_report(self.client, self.run_id, report, files, self.log_case_table)
            self._said_refused(refused)
            self.client.set_terminated(self.run_id, status=status)
            self._record = self._save(self._record.model_copy(update={"synced": True}))
        except Exception as exc:
            self._went_offline(exc)
            self._say_unsynced()

    def end(self, status: str = "FINISHED") -> None:
        """End the run without a report (it failed or was stopped)."""
        if self._record is not None:
            self._record = self._save(self._record.model_copy(update={"status": status}))
        if self.run_id is None or self.offline:
            return
        try:
            self.client.set_terminated(self.run_id, status=status)
        except Exception as exc:
            self._went_offline(exc)

    def describe(self) -> str:
        """Where the run can be seen (a URL, or the command that opens the UI)."""
        if self.offline or self.run_id is None:
            return f"NOT IN MLFLOW ({self._failure}): upload with `{self.sync_command()}`"

        command = open_command(self.uri)
        try:
            experiment = self.experiment_id()
        except Exception:  # the server went away after the run; the run id still says it
            return f"{mask_url_credentials(self.uri).rstrip('/')} (run {self.run_id})"
        base = ui_base(self.uri)
        first = (
            f"{command}  (run {self.run_id})"
            if command
            else run_url(base, experiment, str(self.run_id))
        )
        # The runs table itself (MLflow 3 opens an experiment on its GenAI overview).
        return f"{first}\nruns table: {runs_table_url(base, experiment, self._headline)}"

    def set_headline(self, name: str) -> None:
        """The score the runs table link of `describe` sorts by (`finish` sets it too)."""
        self._headline = name

    def sync_command(self) -> str:
        """The command that replays this root's unsynced run directories."""
        return f"heta-eval-sync --root {self.root}"

    # -- internals ------------------------------------------------------------------------

    @staticmethod
    def _headline_of(report: EvaluationReport) -> str | None:

        return report_tags(report)[HEADLINE_TAG] or None

    def _save(self, record: TrackingRecord) -> TrackingRecord:
        if self._run_dir is None:
            return record
        return write_record(self._run_dir, record)

    def _find_record(self, run_id: str) -> TrackingRecord | None:
        """The record an earlier attempt wrote for `run_id` (its run directory is the
        `heta_eval.run_dir` tag of the run, read from the state's copy)."""

        try:
            run = self.client.get_run(run_id)
        except Exception:
            return None
        earlier = run.data.tags.get(RUN_DIR_TAG)
        record = read_record(Path(earlier)) if earlier else None
        return record if record is not None and record.run_id == run_id else None

    def _went_offline(self, exc: BaseException) -> None:
        """The backend failed: mark the run directory unsynced and send nothing more."""
        if self._failure is not None:
            return
        problem = access_problem(self.uri, exc, self.experiment)
        self._failure = problem or f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        if self._record is not None:
            self._record = self._save(
                self._record.model_copy(update={"synced": False, "reason": self._failure})
            )
        shown = mask_url_credentials(self.uri)
        log.warning(
            "MLflow tracking at %s failed (%s); the evaluation goes on, its run directory "
            "keeps everything and is marked unsynced: replay it with %s",
            shown,
            self._failure,
            self.sync_command(),
        )

    def _say_unsynced(self) -> None:
        where = self._run_dir or self.root
        log.warning(
            "MLflow does not have this run yet (%s); %s keeps it: replay it with %s",
            self._failure or "not created",
            where,
            self.sync_command(),
        )

    def _said_refused(self, refused: list[str]) -> None:
        """Say which items MLflow could not take (the rest was logged), in the log and on
        the run (tag `heta_eval.tracking.rejected`)."""
        if not refused or self.run_id is None:
            return
        shown = "; ".join(refused[:20]) + (
            f" (and {len(refused) - 20} more)" if len(refused) > 20 else ""
        )
        log.warning(
            "MLflow refused %d item(s) of this run, the rest was logged: %s", len(refused), shown
        )
        self.client.set_tag(self.run_id, REJECTED_TAG, f"{len(refused)} item(s): {shown}"[:5000])
