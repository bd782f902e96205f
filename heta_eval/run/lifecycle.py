"""One run, start to end, on one path: lock, identity, reuse or resume, evaluation, the run
directory, tracking.

`evaluate()` is the library's entry point and what the CLI and every sweep job call. The
order of a run:

1. the tracker gets ready in a thread (importing MLflow, opening its store) while the
   benchmark loads;
2. under a lock per configuration and code, the benchmark is loaded and its content digested:
   with the configuration and code digests this is the run's identity;
3. a finished evaluation of the same identity, whose report proves itself and has no failed
   case, is reused: a new tracking run (a child of the sweep's parent in a sweep) gets the
   same report, tagged with where it comes from, and the terminal says so;
4. otherwise the journal of this identity is resumed (final results replayed, failed ones
   evaluated again) or a fresh evaluation starts, tracked from its start (the tracking run
   exists, and its id is saved in the run state, so that a rerun of a killed run continues
   it);
5. the end, the same for fresh, resumed and reused runs: report.json, report.html and
   config.resolved.yaml are written (the run directory is the source of truth), the tracker
   projects the directory into MLflow and ends the run (a backend failure marks the
   directory unsynced for `heta-eval-sync`), the completion is recorded and
   `runner.max_failure_rate` is checked.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from heta_eval import __version__
from heta_eval.async_run import run_sync
from heta_eval.code_identity import git_commit
from heta_eval.config.compose import compose_config
from heta_eval.config.secrets import mask_override
from heta_eval.records import ReusedFrom, TrackingRef
from heta_eval.reporting.run_directory import write_run_artifacts
from heta_eval.run.assembly import assemble
from heta_eval.run.failures import FailureRateExceededError, check_failure_rate
from heta_eval.run.identity import components_code_digest, run_identity
from heta_eval.run.state import RunState, configuration_lock, discarded_unless_used
from heta_eval.run.units import heap_frozen
from heta_eval.tracking.naming import plain_override
from heta_eval.tracking.naming import run_name as short_name

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from heta_eval.records import EvaluationReport, RunIdentity
    from heta_eval.run.assembly import RunComponents
    from heta_eval.run.runner import BenchmarkRunner, LoadedBenchmark
    from heta_eval.run.state import CompletionMarker, RunState

log = logging.getLogger("heta_eval")

REUSED_TAG = "heta_eval.reused_from.run_id"


def _end_status(exc: BaseException) -> str:
    """KILLED for a run stopped from outside (Ctrl-C, SIGTERM, a cancelled task, an exit),
    FAILED for one that failed."""
    import asyncio

    stopped = (KeyboardInterrupt, SystemExit, asyncio.CancelledError)
    return "KILLED" if isinstance(exc, stopped) else "FAILED"


def evaluate(
    config: DictConfig | None = None,
    *,
    overrides: Sequence[str] = (),
    components: RunComponents | None = None,
    parent_run_id: str | None = None,
    sweep_id: str | None = None,
    sweep_job: int | None = None,
    sweep_dir: Path | None = None,
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

    if components is None:
        if config is None:
            config = compose_config(overrides)
        components = assemble(config)
    # They become tags and the run name: secrets masked, Hydra's escapes gone.
    shown = [plain_override(mask_override(o)) for o in overrides]
    sweep = SweepJob(parent_run_id, sweep_id, sweep_job, sweep_dir)
    return run_sync(RunLifecycle(components, shown, sweep).run())


class SweepJob:
    """Where a run sits in a sweep: its parent run, sweep id, job number and directory (all
    None for a single run)."""

    def __init__(
        self,
        parent_run_id: str | None = None,
        sweep_id: str | None = None,
        job: int | None = None,
        directory: Path | None = None,
    ) -> None:
        self.parent_run_id = parent_run_id
        self.sweep_id = sweep_id
        self.job = job
        self.directory = directory


class RunLifecycle:
    """The one path a run takes; see the module docstring for its steps."""

    def __init__(
        self,
        components: RunComponents,
        overrides: Sequence[str] = (),
        sweep: SweepJob | None = None,
    ) -> None:
        self.components = components
        self.overrides = list(overrides)
        self.sweep = sweep or SweepJob()
        self.settings = components.settings
        self.tracker = components.tracker
        self.began = time.time()  # the tracking run starts here, whenever MLflow creates it

    async def run(self) -> EvaluationReport:
        """Evaluate, or reuse, and track; return the report."""

        self.began = time.time()
        connecting = threading.Thread(
            target=self.tracker.connect, name="tracker-connect", daemon=True
        )
        connecting.start()
        code = components_code_digest(self.components)
        lock_key = hashlib.sha256(f"{self.components.config_hash}:{code}".encode()).hexdigest()
        settings = self.settings
        made = (settings.state_dir, settings.store_dir, settings.workspace_dir)
        with discarded_unless_used(*made), configuration_lock(settings.state_dir, lock_key[:24]):
            runner = self.components.runner()
            loaded = await runner.load()
            identity = run_identity(self.components.config_hash, loaded.data_digest, code)
            state = RunState(self.settings.state_dir, identity)
            if not self.settings.resume:
                state.reset()
            completed = state.completed()
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

    async def _evaluate(
        self,
        runner: BenchmarkRunner,
        loaded: LoadedBenchmark,
        identity: RunIdentity,
        state: RunState,
    ) -> EvaluationReport:
        journal = state.journal()
        runner.journal = journal
        previous = state.tracking_run(self.tracker.uri)
        if previous is None or not self.tracker.resume(previous, self.settings.output_dir):
            self._start_tracking()
            state.save_tracking_run(self.tracker.uri, self.tracker.run_id)
        try:
            # What is loaded lives until the report: kept out of the collector's full passes.
            with heap_frozen():
                report = await runner.evaluate(loaded, identity=identity)
        except BaseException as exc:
            with contextlib.suppress(OSError):  # the error being raised says more
                journal.close()
            self.tracker.end(_end_status(exc))
            raise
        return self._finish(report, state)

    def _reuse(self, marker: CompletionMarker, previous: EvaluationReport) -> EvaluationReport:
        """The same identity finished before: the same result, tracked as a run of its own."""

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
        self._start_tracking(
            {
                REUSED_TAG: marker.tracking_run_id or "",
                "heta_eval.reused_from.report_id": marker.report_id,
                "heta_eval.reused_from.finished_at": marker.finished_at.isoformat(),
                # The run's description in the MLflow UI: nothing was evaluated in this run.
                "mlflow.note.content": (
                    f"Reused result: the same configuration, data and code were evaluated by "
                    f"{origin} on {when} (report {marker.report_id}); this run evaluated "
                    "nothing and logs that result. runner.resume=false evaluates again."
                ),
            }
        )
        run = previous.run.model_copy(
            update={"output_dir": str(self.settings.output_dir), "reused_from": source}
        )
        return self._finish(previous.model_copy(update={"run": run}), None)

    def _finish(self, report: EvaluationReport, state: RunState | None) -> EvaluationReport:
        """The end of every run: the run directory written, projected into MLflow and the
        tracking run ended, the completion recorded (`state`; None: a reused result,
        recorded before), then the failure rate checked."""

        tracking = TrackingRef(uri=self.tracker.uri, run_id=self.tracker.run_id)
        report = report.model_copy(
            update={"run": report.run.model_copy(update={"tracking": tracking})}
        )
        failure: FailureRateExceededError | None = None
        try:
            check_failure_rate(report, self.settings.max_failure_rate)
        except FailureRateExceededError as exc:
            failure = exc
        try:
            paths = write_run_artifacts(report, self.settings.output_dir, self.components.resolved)
            self.tracker.finish(report, "FINISHED" if failure is None else "FAILED")
        except BaseException as exc:
            self.tracker.end(_end_status(exc))
            raise
        if state is not None:
            state.mark_completed(paths["report"], report, self.tracker.run_id)
        if failure is not None:
            raise failure
        # The returned report says how to open its tracking run (never written to files).
        tracking = tracking.model_copy(update={"where": self.tracker.describe()})
        return report.model_copy(
            update={"run": report.run.model_copy(update={"tracking": tracking})}
        )

    def _start_tracking(self, extra_tags: Mapping[str, str] | None = None) -> None:

        manifest = self.components.benchmark.manifest
        run_name = short_name(
            manifest.name, self.components.recipe.name, self.overrides, self.sweep.job
        )
        self.tracker.start(
            run_name=run_name,
            config=self.components.resolved,
            tags={**self._tags(), **(extra_tags or {})},
            run_dir=self.settings.output_dir,
            parent_run_id=self.sweep.parent_run_id,
            sweep_dir=self.sweep.directory,
            start_time=self.began,
        )

    def _tags(self) -> dict[str, str]:

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
        # A replay: which file contents were scored (other recipes have none).
        digests = components.recipe.content_digests()
        tags.update({f"recipe.{kind}.sha256": sha for kind, sha in digests.items()})
        if self.sweep.sweep_id:
            tags["heta_eval.sweep_id"] = self.sweep.sweep_id
        if self.sweep.job is not None:
            tags["heta_eval.sweep_job"] = str(self.sweep.job)
        commit = git_commit()
        if commit:
            tags["mlflow.source.git.commit"] = commit
        return tags
