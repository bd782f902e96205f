"""One run, start to end: lock, identity, reuse or resume, evaluation, artifacts, tracking.

`evaluate()` is the library's entry point and what the CLI and every sweep job call. The
order of a run:

1. an MLflow tracker starts in a worker process (`run.tracker_process`: importing MLflow,
   opening its store and creating the run are most of a small run's overhead, done there on
   another core while this process loads and evaluates); another tracker connects in a
   background thread while the benchmark loads;
2. under a lock per configuration and code, the benchmark is loaded and its content digested:
   with the configuration and code digests this is the run's identity;
3. a finished evaluation of the same identity, whose report proves itself and has no failed
   case, is reused: a new tracking run (a child of the sweep's parent in a sweep) gets the
   same metrics and artifacts, tagged with where they come from, and the terminal says so;
4. otherwise the journal of this identity is resumed (final results replayed, failed ones
   evaluated again) or a fresh evaluation starts, tracked from its start (the tracking run
   exists, and its id is saved in the run state, even if the evaluation is killed);
5. report.json, report.html and config.resolved.yaml are written once, logged, and the
   completion marker records the identity and the report's digest (a sweep's job in the
   launching process hands logging, the marker and report.html to the sweep's workers and
   returns: `run.sweep_workers`);
6. `runner.max_failure_rate` is checked, for evaluated and reused results alike.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from heta_eval import __version__
from heta_eval.async_run import run_sync
from heta_eval.run import sweep_loads, sweep_workers
from heta_eval.run.artifacts import HtmlRenderer
from heta_eval.run.units import heap_frozen

if TYPE_CHECKING:
    from pathlib import Path

    from omegaconf import DictConfig

    from heta_eval.protocols import Tracker
    from heta_eval.records import BenchmarkLoadReuse, EvaluationReport, RunIdentity
    from heta_eval.run.assembly import RunComponents
    from heta_eval.run.failures import FailureRateExceededError
    from heta_eval.run.runner import BenchmarkRunner, LoadedBenchmark
    from heta_eval.run.state import CompletionMarker, RunState
    from heta_eval.run.tracker_process import TrackerProcess

log = logging.getLogger("heta_eval")

REUSED_TAG = "heta_eval.reused_from.run_id"


def _end_status(exc: BaseException) -> str:
    """KILLED for a run stopped from outside (Ctrl-C, SIGTERM, a cancelled task, an exit),
    FAILED for one that failed."""
    import asyncio

    stopped = (KeyboardInterrupt, SystemExit, asyncio.CancelledError)
    return "KILLED" if isinstance(exc, stopped) else "FAILED"


def _handed_over(exc: BaseException) -> bool:
    """Whether `exc` is a failure-rate error raised after the run's tracking was handed to
    another process, which ends the MLflow run itself."""
    from heta_eval.run.failures import FailureRateExceededError

    return isinstance(exc, FailureRateExceededError) and exc.handed_over


def evaluate(
    config: DictConfig | None = None,
    *,
    overrides: Sequence[str] = (),
    components: RunComponents | None = None,
    parent_run_id: str | None = None,
    sweep_id: str | None = None,
    sweep_job: int | None = None,
) -> EvaluationReport:
    """Evaluate a recipe on a benchmark and return the `EvaluationReport`.

    Give one of: `config`, a composed config (the CLI passes Hydra's); `overrides`, Hydra
    overrides composed with the packaged `conf/` (`["benchmark=beir", "runner.top_k=10"]`);
    or `components`, already created (`heta_eval.run.assembly.assemble`). The report's
    `run` says where it was written, its tracking run and, when an identical earlier
    evaluation was reused, which one. Raises `ConfigError` before any work for a bad
    config and `FailureRateExceededError` (after writing and tracking the report) when
    more case results failed than `runner.max_failure_rate` allows.
    """
    from heta_eval.config.secrets import mask_override
    from heta_eval.run.assembly import assemble

    if components is None:
        if config is None:
            from heta_eval.config.compose import compose_config

            config = compose_config(overrides)
        components = assemble(config)
    from heta_eval.tracking.naming import plain_override

    # They become tags and the run name: secrets masked, Hydra's escapes gone.
    shown = [plain_override(mask_override(o)) for o in overrides]
    lifecycle = RunLifecycle(components, shown, parent_run_id, sweep_id, sweep_job)
    return run_sync(lifecycle.run())


class RunLifecycle:
    """The one path a run takes; see the module docstring for its steps."""

    def __init__(
        self,
        components: RunComponents,
        overrides: Sequence[str] = (),
        parent_run_id: str | None = None,
        sweep_id: str | None = None,
        sweep_job: int | None = None,
    ) -> None:
        self.components = components
        self.overrides = list(overrides)
        self.parent_run_id = parent_run_id
        self.sweep_id = sweep_id
        self.sweep_job = sweep_job  # Hydra's job number in a sweep: in the run name and tags
        self.settings = components.settings
        self.tracker: Tracker = components.tracker
        self.worker: TrackerProcess | None = None
        self.renderer = HtmlRenderer()
        self.began = time.time()  # the tracking run starts here, whenever MLflow creates it
        self.load_reused: BenchmarkLoadReuse | None = None  # see run.sweep_loads

    async def run(self) -> EvaluationReport:
        """Evaluate, or reuse, and track; return the report."""
        from heta_eval.run.tracker_process import TrackerProcess

        self.began = time.time()
        connecting: threading.Thread | None = None
        self.worker = TrackerProcess.for_components(self.components)
        if self.worker is not None:
            self.tracker = self.worker
            self.worker.connect()  # starts the worker process and returns
        else:
            connecting = threading.Thread(
                target=self.tracker.connect, name="tracker-connect", daemon=True
            )
            connecting.start()
        if self._hands_over:
            sweep_workers.html_pages()  # the sweep's figure worker starts with its first job
        else:
            self.renderer.start()
        try:
            return await self._run(connecting)
        finally:
            self.renderer.close()
            if self.worker is not None:
                self.worker.close()

    @property
    def _hands_over(self) -> bool:
        """Whether this run is a sweep's job that hands its last steps (logging, its
        completion, report.html) to the sweep's workers instead of waiting for them."""
        return self.worker is not None and self.worker.shared

    async def _run(self, connecting: threading.Thread | None) -> EvaluationReport:
        from heta_eval.run.identity import components_code_digest, run_identity
        from heta_eval.run.state import RunState, configuration_lock

        code = components_code_digest(self.components)
        lock_key = hashlib.sha256(f"{self.components.config_hash}:{code}".encode()).hexdigest()
        with configuration_lock(self.settings.state_dir, lock_key[:24]):
            runner = self.components.runner()
            if sweep_workers.enabled():
                # A sweep's job in its launching process: the last job's benchmark may serve.
                key = sweep_loads.load_key(self.components.benchmark_key, runner)
                loaded = await sweep_loads.load(runner, key, self.sweep_job)
                self.load_reused = loaded.reused
            else:
                loaded = await runner.load()
            identity = run_identity(self.components.config_hash, loaded.data_digest, code)
            state = RunState(self.settings.state_dir, identity)
            if self._hands_over:
                # An earlier job of this sweep with the same identity may still be finishing.
                sweep_workers.wait_for_state(state.directory)
            if not self.settings.resume:
                state.reset()
            completed = state.completed()
            if connecting is not None:
                connecting.join()
            if completed is not None:
                marker, previous = completed
                if not previous.failed_cases:
                    return self._reuse(marker, previous)
                log.info(
                    "the finished run of this configuration has %d failed case results; "
                    "evaluating them again",
                    len(previous.failed_cases),
                )
                state.forget_completion()
            return await self._evaluate(runner, loaded, identity, state)

    # -- evaluating -----------------------------------------------------------------------

    async def _evaluate(
        self,
        runner: BenchmarkRunner,
        loaded: LoadedBenchmark,
        identity: RunIdentity,
        state: RunState,
    ) -> EvaluationReport:
        from heta_eval.records import TrackingRef
        from heta_eval.run.failures import check_failure_rate

        journal = state.journal()
        runner.journal = journal
        previous = state.tracking_run(self.tracker.uri)
        if previous is None or not self.tracker.resume(previous):
            if self.worker is not None:
                # Nothing waits for MLflow here: the worker creates the run and saves its id
                # into the run state itself, also when this process is killed after sending
                # `start` (the worker reads its input to the end), so that a rerun continues
                # that run. The first wait is for the report's tracking reference.
                self._start_tracking(state_dir=state.directory)
            else:
                self._start_tracking()
                state.save_tracking_run(self.tracker.uri, self.tracker.run_id)
        try:
            # What is loaded lives until the report: kept out of the collector's full passes.
            with heap_frozen():
                report = await runner.evaluate(loaded, identity=identity)
            tracking = TrackingRef(uri=self.tracker.uri, run_id=self.tracker.run_id)
            report = report.model_copy(
                update={"run": report.run.model_copy(update={"tracking": tracking})}
            )
            if self._hands_over:
                return self._hand_over(report, state.directory)
            paths = self._write_artifacts(report)
            if self._finished_durably(report, paths, state):
                return self._with_where(report)
            self.tracker.log_report(report, paths)
            state.mark_completed(paths["report"], report, self.tracker.run_id)
            check_failure_rate(report, self.settings.max_failure_rate)
        except BaseException as exc:
            with contextlib.suppress(OSError):  # the error being raised says more
                journal.close()
            if not _handed_over(exc):
                self.tracker.end(_end_status(exc))
            raise
        self.tracker.end("FINISHED")
        return self._with_where(report)

    def _finished_durably(
        self, report: EvaluationReport, paths: dict[str, Path], state: RunState | None
    ) -> bool:
        """A single run tracked by the tracking service: its logging and end handed over
        once the service has them on disk (`TrackerProcess.finish_durably`), the completion
        recorded in `state` (None: a reused result, recorded before), and the run goes
        without waiting for MLflow. False when the service did
        not take them (the caller logs and ends the run itself). Raises the failure-rate
        error, the run already handed over with status FAILED."""
        if self.worker is None or not self.worker.spools:
            return False
        failure, status = self._failure_status(report)
        if self.worker.finish_durably(report, paths, status=status) is None:
            return False
        if state is not None:
            state.mark_completed(paths["report"], report, self.tracker.run_id)
        if failure is not None:
            failure.handed_over = True  # the service ends the run
            raise failure
        return True

    def _failure_status(
        self, report: EvaluationReport
    ) -> tuple[FailureRateExceededError | None, str]:
        """The failure-rate error the report calls for (None when within the limit) and the
        MLflow status the run ends with."""
        from heta_eval.run.failures import FailureRateExceededError, check_failure_rate

        try:
            check_failure_rate(report, self.settings.max_failure_rate)
        except FailureRateExceededError as exc:
            return exc, "FAILED"
        return None, "FINISHED"

    def _hand_over(self, report: EvaluationReport, state_dir: Path | None) -> EvaluationReport:
        """A sweep job's end: report.json and the resolved config written here; logging
        them, recording the completion in `state_dir` and ending the run handed to the
        sweep's tracker worker, report.html to its page writer (logged once written); the
        next job starts meanwhile. A failure before the hand-over raises as in a run."""
        from heta_eval.run.artifacts import write_run_artifacts
        from heta_eval.run.html_pages import REPORT_HTML

        assert self.worker is not None
        paths = write_run_artifacts(
            report, self.settings.output_dir, self.components.resolved, html=False
        )
        failure, status = self._failure_status(report)
        self.worker.hand_over(report, paths, status=status, state_dir=state_dir, more=True)
        sweep_workers.html_pages().submit(
            report, self.settings.output_dir / REPORT_HTML, then=self.worker.log_artifact
        )
        if failure is not None:
            failure.handed_over = True  # the worker ends the run
            raise failure
        return self._with_where(report)

    # -- reusing ----------------------------------------------------------------------------

    def _reuse(self, marker: CompletionMarker, previous: EvaluationReport) -> EvaluationReport:
        """The same identity finished before: the same result, tracked as a run of its own."""
        from heta_eval.records import ReusedFrom, TrackingRef
        from heta_eval.run.failures import check_failure_rate

        source = ReusedFrom(
            report_id=marker.report_id,
            finished_at=marker.finished_at,
            tracking_uri=marker.tracking_uri,
            tracking_run_id=marker.tracking_run_id,
        )
        log.info(
            "already evaluated on %s (report %s, tracking run %s) with the same configuration, "
            "data and code: reusing that result (runner.resume=false evaluates again)",
            marker.finished_at.isoformat(timespec="seconds"),
            marker.report_id,
            marker.tracking_run_id,
        )
        when = marker.finished_at.strftime("%Y-%m-%d %H:%M:%S %Z")
        origin = f"run {marker.tracking_run_id}" if marker.tracking_run_id else "an untracked run"
        tags = {
            REUSED_TAG: marker.tracking_run_id or "",
            "heta_eval.reused_from.report_id": marker.report_id,
            "heta_eval.reused_from.finished_at": marker.finished_at.isoformat(),
            # The run's description in the MLflow UI: nothing was evaluated in this run.
            "mlflow.note.content": (
                f"Reused result: the same configuration, data and code were evaluated by "
                f"{origin} on {when} (report {marker.report_id}); this run evaluated nothing "
                "and logs that result. runner.resume=false evaluates again."
            ),
        }
        self._start_tracking(tags)
        run = previous.run.model_copy(
            update={
                "output_dir": str(self.settings.output_dir),
                "tracking": TrackingRef(uri=self.tracker.uri, run_id=self.tracker.run_id),
                "reused_from": source,
                "benchmark_load_reused": self.load_reused,
            }
        )
        report = previous.model_copy(update={"run": run})
        if self._hands_over:
            try:
                return self._hand_over(report, None)
            except BaseException as exc:
                if not _handed_over(exc):
                    self.tracker.end(_end_status(exc))
                raise
        try:
            paths = self._write_artifacts(report)
            if self._finished_durably(report, paths, None):
                return self._with_where(report)
            self.tracker.log_report(report, paths)
            check_failure_rate(report, self.settings.max_failure_rate)
        except BaseException as exc:
            if not _handed_over(exc):
                self.tracker.end(_end_status(exc))
            raise
        self.tracker.end("FINISHED")
        return self._with_where(report)

    def _write_artifacts(self, report: EvaluationReport) -> dict[str, Path]:
        """The run's files, written while the tracker worker reads the report and the
        report.html worker draws its figures."""
        from heta_eval.run.artifacts import write_run_artifacts

        if self.worker is not None:
            self.worker.prepare_report(report)
        return write_run_artifacts(
            report, self.settings.output_dir, self.components.resolved, self.renderer
        )

    # -- tracking ---------------------------------------------------------------------------

    def _start_tracking(
        self, extra_tags: Mapping[str, str] | None = None, state_dir: Path | None = None
    ) -> None:
        from heta_eval.tracking.naming import run_name as short_name

        manifest = self.components.benchmark.manifest
        run_name = short_name(
            manifest.name, self.components.recipe.name, self.overrides, self.sweep_job
        )
        tags = {**self._tags(), **(extra_tags or {})}
        config = self.components.resolved
        if self.worker is not None:
            self.worker.start(
                run_name=run_name,
                config=config,
                tags=tags,
                parent_run_id=self.parent_run_id,
                state_dir=state_dir,
                start_time=self.began,
            )
        else:
            self.tracker.start(
                run_name=run_name,
                config=config,
                tags=tags,
                parent_run_id=sweep_workers.resolve_parent(self.parent_run_id),
                start_time=self.began,
            )

    def _tags(self) -> dict[str, str]:
        from heta_eval.code_identity import git_commit
        from heta_eval.tracking.naming import source_name

        components = self.components
        manifest = components.benchmark.manifest
        tags = {
            "heta_eval.version": __version__,
            "heta_eval.config_hash": components.config_hash,
            "benchmark.name": manifest.name,
            "benchmark.version": manifest.version,
            "benchmark.split": manifest.split,
            "benchmark.build_scope": manifest.build_scope,
            "recipe.name": components.recipe.name,
            "heta_eval.overrides": " ".join(self.overrides),
        }
        digests = getattr(components.recipe, "content_digests", None)
        if callable(digests):  # a replay: which file contents were scored
            tags.update({f"recipe.{kind}.sha256": sha for kind, sha in digests().items()})
        if self.sweep_id:
            tags["heta_eval.sweep_id"] = self.sweep_id
        if self.sweep_job is not None:
            tags["heta_eval.sweep_job"] = str(self.sweep_job)
        if sweep_workers.enabled():
            reused = self.load_reused
            tags[sweep_loads.LOAD_TAG] = "read" if reused is None else "reused"
            if reused is not None:
                tags[sweep_loads.REUSED_FROM_JOB_TAG] = str(reused.job)
        commit = git_commit()
        if commit:
            tags["mlflow.source.git.commit"] = commit
        # This process's program, not the tracker worker's (which adds the other source tags).
        tags["mlflow.source.name"] = source_name()
        return tags

    def _with_where(self, report: EvaluationReport) -> EvaluationReport:
        """The returned report says how to open its tracking run (never written to files)."""
        tracking = report.run.tracking.model_copy(update={"where": self.tracker.describe()})
        return report.model_copy(
            update={"run": report.run.model_copy(update={"tracking": tracking})}
        )
