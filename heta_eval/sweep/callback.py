"""Group the jobs of a Hydra multirun under one MLflow parent run, and summarise them.

`MlflowSweepCallback` (configured as `hydra.callbacks.mlflow_sweep`) runs in the launching
process. `on_multirun_start` creates the store, the experiment and the parent run before any
job starts, and writes the parent's id into the sweep directory, where each job finds it
(`parent_run_id`). The parent is identified across reruns by `heta_eval.sweep_id` (a hash of
the config name and the command line's overrides): rerunning a sweep whose parent did not
finish reuses that parent. `on_multirun_end` logs a summary of the children (the tables
`sweep_summary.json`, one row per job, and `sweep_best.json`, the best job of each score;
`best/<score>` with that run's CI bounds), prints the jobs' table with the compare command,
and ends the parent.

Hydra does not call `on_multirun_end` when a job fails (the sweeper re-raises the job's
exception after the launcher has run every job of the batch), so an `atexit` handler armed in
`on_multirun_start` writes the summary of what finished and ends the parent FAILED. SIGTERM
and SIGHUP are turned into that same exit (the parent ends KILLED), so a sweep that exited
never leaves its parent RUNNING. Jobs that fail before their run exists are seen through
`on_job_end`, which leaves one small JSON record per job in the sweep directory.

With the basic launcher the jobs run in this process, one after another: MLflow is imported
once and each tracking URI has one client (`tracking.sqlite_store.open_client`). The parts:
`ids` (the sweep id, the parent's tags, the files the jobs read), `config` (the parent's
name, params and tags from the configuration), `parent` (its MLflow calls), `end` (the
summary).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import signal
import threading
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from heta_eval.code_identity import git_commit
from heta_eval.config.secrets import mask_override
from heta_eval.results.suite_table import SUITE_TAG
from heta_eval.results.sweep_ids import KIND_TAG as KIND_TAG
from heta_eval.results.sweep_ids import PARENT_RUN_FILE as PARENT_RUN_FILE
from heta_eval.results.sweep_ids import SWEEP_ID_FILE as SWEEP_ID_FILE
from heta_eval.results.sweep_ids import SWEEP_ID_TAG as SWEEP_ID_TAG
from heta_eval.results.sweep_ids import SWEEP_KIND as SWEEP_KIND
from heta_eval.results.sweep_ids import SWEPT_KEYS_FILE as SWEPT_KEYS_FILE
from heta_eval.results.sweep_ids import parent_run_id as parent_run_id
from heta_eval.results.sweep_ids import read_sweep_id as read_sweep_id
from heta_eval.results.sweep_ids import read_swept_keys as read_swept_keys
from heta_eval.results.sweep_ids import sweep_id
from heta_eval.results.sweep_ids import swept_first as swept_first
from heta_eval.results.sweep_rows import write_job_record

# Re-exported: what the jobs, the runs views and the tests import from here.
from heta_eval.sweep.config import (
    mlflow_tracker,
    parent_fields,
    parent_name,
)
from heta_eval.sweep.config import suite as sweep_suite
from heta_eval.sweep.end import BEST_RUN_TAG as BEST_RUN_TAG
from heta_eval.sweep.end import BEST_TABLE as BEST_TABLE
from heta_eval.sweep.end import HEADLINE_METRIC_TAG as HEADLINE_METRIC_TAG
from heta_eval.sweep.end import PARENT_TAG as PARENT_TAG
from heta_eval.sweep.end import SUMMARY_TABLE as SUMMARY_TABLE
from heta_eval.sweep.parent import (
    LOCAL_LAUNCHERS,
    close_parent,
    mark_sweep,
    open_parent,
    warn_not_created,
)
from heta_eval.tracking.access import access_problem

__all__ = ["MlflowSweepCallback", "parent_name", "sweep_id"]

log = logging.getLogger(__name__)


class MlflowSweepCallback(Callback):
    """Hydra callback: one MLflow parent run per multirun, summarised and ended at its end."""

    def __init__(self) -> None:
        self._tracker: Any = None
        self._sweep_dir: Path | None = None
        self._armed = False
        self._exit_status = "FAILED"
        self._signal_handlers: dict[int, Any] = {}
        self._launcher = ""
        self._started_ms = 0
        self._optimized: str | None = None
        self._suite: Any = None
        self._run_name = ""

    def __getstate__(self) -> dict[str, Any]:
        # Launchers ship the callbacks to their workers; the MLflow client and the exit
        # handler belong to the launching process only.
        return {"_tracker": None, "_sweep_dir": self._sweep_dir, "_armed": False}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._tracker = None
        self._sweep_dir = state.get("_sweep_dir")
        self._armed = False
        self._exit_status = "FAILED"
        self._signal_handlers = {}
        self._launcher = ""
        self._started_ms = 0
        self._optimized = None
        self._suite = None
        self._run_name = ""

    # -- the launching process -------------------------------------------------------------

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        logging.getLogger("alembic").setLevel(logging.WARNING)
        tracker = mlflow_tracker(config)
        if tracker is None:
            return
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        fields = parent_fields(config, sweep_dir, kwargs.get("config_name"))
        sid, swept, overrides, params, tags = fields
        self._suite = sweep_suite(config)
        if self._suite is not None:
            tags[SUITE_TAG] = self._suite.name

        commit = git_commit()
        if commit:
            tags["mlflow.source.git.commit"] = commit
        # The jobs name their runs with the swept settings first (`#1 sample/bm25 chunk_size=128`).
        (sweep_dir / SWEPT_KEYS_FILE).write_text(json.dumps(sorted(swept)), encoding="utf-8")
        self._run_name = parent_name(tags, overrides, swept)
        self._launcher = params["sweep.launcher"]
        self._started_ms = _now_ms()
        self._optimized = OmegaConf.select(config, "optimized_metric", default=None)
        (sweep_dir / SWEEP_ID_FILE).write_text(sid, encoding="utf-8")
        try:
            suite = None if self._suite is None else self._suite.model_dump(mode="json")
            summary = {"optimized": self._optimized, "suite": suite}
            open_parent(tracker, sweep_dir, sid, params, tags, self._run_name, summary)
        except Exception as exc:
            # A tracking server that is down must not stop the sweep: the sweep and job
            # directories keep everything for heta-eval-sync.
            refused = access_problem(tracker.uri, exc, tracker.experiment)
            warn_not_created(sweep_dir, tracker.root, refused, exc)
            tracker = None  # the sweep's record still gets its final status at the end
        self._arm(tracker, sweep_dir)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if not self._armed:
            return
        self._disarm()
        assert self._sweep_dir is not None
        if self._tracker is None:
            mark_sweep(self._sweep_dir, "FINISHED", synced=False)
            return
        close_parent(self._tracker, self._sweep_dir, self._optimized, self._suite)

    # -- each job (in the launching process or a worker) -----------------------------------

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        """Record the job's outcome in the sweep directory (read by the summary)."""
        from hydra.core.hydra_config import HydraConfig
        from hydra.core.utils import JobStatus
        from hydra.types import RunMode

        try:
            hydra_cfg = HydraConfig.get()
            if hydra_cfg.mode != RunMode.MULTIRUN:
                return
            sweep_dir = Path(hydra_cfg.sweep.dir)
            if parent_run_id(sweep_dir) is None and read_sweep_id(sweep_dir) is None:
                return  # an untracked sweep
            failed = job_return.status == JobStatus.FAILED
            error = getattr(job_return, "_return_value", None) if failed else None
            write_job_record(
                sweep_dir,
                {
                    "num": hydra_cfg.job.num,
                    "status": job_return.status.name,
                    "overrides": [mask_override(str(o)) for o in job_return.overrides or []],
                    "error": f"{type(error).__name__}: {error}" if error is not None else None,
                },
            )
        except Exception as exc:  # a record is a convenience; never fail a job over it
            log.warning("could not record the job's outcome: %s", exc)

    # -- internals -------------------------------------------------------------------------

    def _arm(self, tracker: Any, sweep_dir: Path) -> None:
        """End the parent run (or, when it could not be created, the sweep's record) at
        exit, and let the jobs find the parent."""
        self._tracker = tracker
        self._sweep_dir = sweep_dir
        self._armed = True
        atexit.register(self._at_exit)
        self._exit_on_signals()
        if tracker is not None:
            (sweep_dir / PARENT_RUN_FILE).write_text(tracker.run_id, encoding="utf-8")

    def _exit_on_signals(self) -> None:
        """SIGTERM/SIGHUP (scancel, a closed terminal) exit through atexit, not past it."""
        if threading.current_thread() is not threading.main_thread():
            return

        def stop(signum: int, frame: Any) -> None:
            self._exit_status = "KILLED"
            raise SystemExit(128 + signum)

        for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            if sig is not None and signal.getsignal(sig) == signal.SIG_DFL:
                self._signal_handlers[sig] = signal.signal(sig, stop)

    def _disarm(self) -> None:
        self._armed = False
        atexit.unregister(self._at_exit)
        for sig, handler in self._signal_handlers.items():
            with contextlib.suppress(ValueError):  # not in the main thread
                signal.signal(sig, handler)
        self._signal_handlers.clear()

    def _at_exit(self) -> None:
        """The sweep exited without `on_multirun_end` (a job failed, or it was interrupted):
        summarise what finished and end the parent FAILED (KILLED after SIGTERM/SIGHUP)."""
        if not self._armed:
            return
        self._armed = False
        assert self._sweep_dir is not None
        if self._tracker is None:
            mark_sweep(self._sweep_dir, self._exit_status, synced=False)
            return
        since = self._started_ms if self._launcher in LOCAL_LAUNCHERS else None
        close_parent(
            self._tracker,
            self._sweep_dir,
            self._optimized,
            self._suite,
            exit_status=self._exit_status,
            end_orphans_since=since,
        )


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)
