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
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import signal
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from heta_eval.config.hydra_outputs import config_secrets, scrub_logs
from heta_eval.config.secrets import mask_override
from heta_eval.tracking.access import access_problem
from heta_eval.tracking.naming import metric_name, param_value, plain_override
from heta_eval.tracking.suite_table import SUITE_TAG
from heta_eval.tracking.sweep_end import BEST_RUN_TAG as BEST_RUN_TAG
from heta_eval.tracking.sweep_end import BEST_TABLE as BEST_TABLE
from heta_eval.tracking.sweep_end import HEADLINE_METRIC_TAG as HEADLINE_METRIC_TAG
from heta_eval.tracking.sweep_end import PARENT_TAG as PARENT_TAG
from heta_eval.tracking.sweep_end import SUMMARY_TABLE as SUMMARY_TABLE
from heta_eval.tracking.sweep_end import SweepRow, child_runs, summarise_sweep
from heta_eval.tracking.sweep_summary import JOBS_DIR

log = logging.getLogger(__name__)

PARENT_RUN_FILE = ".mlflow_parent_run_id"
SWEEP_ID_FILE = ".heta_eval_sweep_id"
SWEPT_KEYS_FILE = ".heta_eval_swept_keys.json"

KIND_TAG = "heta_eval.kind"
SWEEP_KIND = "sweep"
SWEEP_ID_TAG = "heta_eval.sweep_id"
# Launchers whose jobs are processes of the launching one (they end when it ends): at exit,
# their child runs still RUNNING are ended KILLED. SLURM jobs outlive the launcher.
LOCAL_LAUNCHERS = frozenset({"basic", "joblib", "local_parallel", "submitit_local"})
TAGS_PER_BATCH = 100  # MLflow's per-request limits


def parent_run_id(sweep_dir: str | Path) -> str | None:
    """The parent run id the sweep callback left in `sweep_dir`, if any."""
    marker = Path(sweep_dir) / PARENT_RUN_FILE
    return marker.read_text(encoding="utf-8").strip() if marker.is_file() else None


def read_sweep_id(sweep_dir: str | Path) -> str | None:
    """The `heta_eval.sweep_id` of the sweep writing to `sweep_dir`, if it is tracked."""
    marker = Path(sweep_dir) / SWEEP_ID_FILE
    return marker.read_text(encoding="utf-8").strip() if marker.is_file() else None


def sweep_id(overrides: Iterable[str], config_name: str | None) -> str:
    """Stable id of a sweep: sha256 of the config name and its sorted overrides, 16 hex digits.

    `overrides` are the command line's (`hydra.overrides.task`), so the same command gives the
    same id whatever the launcher, the order of the overrides or the time it runs.
    """
    text = "\n".join([config_name or "", *sorted(overrides)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_swept_keys(sweep_dir: str | Path) -> list[str]:
    """The keys (or groups) the sweep writing to `sweep_dir` varies, if it is tracked."""
    marker = Path(sweep_dir) / SWEPT_KEYS_FILE
    try:
        keys = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [str(k) for k in keys] if isinstance(keys, list) else []


def swept_first(overrides: Sequence[str], swept: Iterable[str]) -> list[str]:
    """`overrides` with those of the `swept` keys first (the rest in their order)."""
    keys = set(swept)
    return sorted(overrides, key=lambda o: _split_override(o)[0] not in keys)


def parent_name(tags: Mapping[str, str], overrides: Sequence[str], swept: set[str]) -> str:
    """The sweep's parent run named by what it sweeps: `sweep sample/bm25 chunk_size=null,128`
    (`*` for a benchmark or recipe the sweep varies; locations left out)."""
    from heta_eval.tracking.naming import MAX_RUN_NAME, short_overrides

    benchmark = tags.get("benchmark.name") or "*"
    recipe = tags.get("recipe.name") or "*"
    named = f"{benchmark}/{recipe}"
    varied = [o for o in overrides if _split_override(o)[0] in swept]
    groups = [o for o in varied if _split_override(o)[0] in ("benchmark", "recipe")]
    name = " ".join(["sweep", named, *groups, *short_overrides(varied, named)])
    return name if len(name) <= MAX_RUN_NAME else name[: MAX_RUN_NAME - 1] + "…"


def _split_override(override: str) -> tuple[str, str]:
    key, _, value = override.partition("=")
    return key.lstrip("+~"), value


def _swept_keys(overrides: Sequence[str]) -> set[str]:
    """Keys (or config groups) that take more than one value in the sweep."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception:  # already parsed by Hydra; be conservative if not
        return {_split_override(o)[0] for o in overrides}
    return {o.key_or_group for o in parsed if o.is_sweep_override()}


def _sweeper_params(config: DictConfig) -> list[str]:
    """The sweeper's own search space (`hydra.sweeper.params`) as overrides."""
    params = OmegaConf.select(config, "hydra.sweeper.params")
    if not params:
        return []
    return [f"{k}={v}" for k, v in params.items()]


def _mlflow_tracker(config: DictConfig) -> Any:
    from hydra.core.hydra_config import HydraConfig

    from heta_eval.config.components import instantiate
    from heta_eval.tracking.mlflow_tracker import MlflowTracker

    # Callbacks run before Hydra sets its config for the jobs; `${hydra:...}` needs it.
    HydraConfig.instance().set_config(config)
    spec = OmegaConf.to_container(config.tracking, resolve=True)
    if not isinstance(spec, dict) or not str(spec.get("_target_", "")).endswith("MlflowTracker"):
        return None
    tracker = instantiate(spec)
    return tracker if isinstance(tracker, MlflowTracker) else None


def _suite(config: DictConfig) -> Any:
    """The suite a sweep runs (`suite=uda`: `conf/suite/uda.yaml`), or None."""
    from heta_eval.records.suite import suite_from_config

    spec = OmegaConf.select(config, "suite", default=None)
    if spec is None:
        return None
    return suite_from_config(OmegaConf.to_container(spec, resolve=True))


def _fixed_names(config: DictConfig, swept: set[str]) -> dict[str, str]:
    """benchmark.name / recipe.name when no override of the sweep can change them."""
    names: dict[str, str] = {}

    def touched(*prefixes: str) -> bool:
        return any(k == p or k.startswith(p + ".") for k in swept for p in prefixes)

    if not touched("experiment") and not swept & {"recipe", "recipe.name"}:
        name = OmegaConf.select(config, "recipe.name", default=None)
        if name:
            names["recipe.name"] = str(name)
    if not touched("benchmark", "experiment"):
        # The adapter names itself (e.g. beir-scifact); constructing one reads no data.
        try:
            from heta_eval.config.components import instantiate

            spec = OmegaConf.to_container(config.benchmark, resolve=True)
            names["benchmark.name"] = str(instantiate(spec).manifest.name)
        except Exception:
            choice = OmegaConf.select(config, "hydra.runtime.choices.benchmark", default=None)
            if choice:
                names["benchmark.name"] = str(choice)
    return names


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
        tracker = _mlflow_tracker(config)
        if tracker is None:
            return
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        task_overrides = [str(o) for o in config.hydra.overrides.task]
        sid = sweep_id(task_overrides, kwargs.get("config_name"))
        swept = _swept_keys(_sweeper_params(config) + task_overrides)
        # Hydra logs each job's overrides: keys given there stay out of the log.
        scrub_logs(config_secrets(config, task_overrides))
        task_overrides = [plain_override(mask_override(o)) for o in task_overrides]
        overrides = [mask_override(o) for o in _sweeper_params(config)] + task_overrides
        choices = OmegaConf.select(config, "hydra.runtime.choices", default={}) or {}
        params = {
            "sweep.overrides": " ".join(task_overrides),
            "sweep.launcher": str(choices.get("hydra/launcher", "")),
            "sweep.sweeper": str(choices.get("hydra/sweeper", "")),
            **{metric_name(key): value for key, value in map(_split_override, overrides)},
        }
        tags = {
            KIND_TAG: SWEEP_KIND,
            SWEEP_ID_TAG: sid,
            # This attempt's; the params keep the first attempt's.
            "heta_eval.launcher": params["sweep.launcher"],
            "heta_eval.sweeper": params["sweep.sweeper"],
            "heta_eval.sweep_dir": str(sweep_dir),
            "heta_eval.config_name": str(kwargs.get("config_name") or ""),
            **_fixed_names(config, swept),
        }
        self._suite = _suite(config)
        if self._suite is not None:
            tags[SUITE_TAG] = self._suite.name
        from heta_eval.code_identity import git_commit

        commit = git_commit()
        if commit:
            tags["mlflow.source.git.commit"] = commit
        # The jobs name their runs with the swept settings first (`#1 sample/bm25 chunk_size=128`).
        (sweep_dir / SWEPT_KEYS_FILE).write_text(json.dumps(sorted(swept)), encoding="utf-8")
        self._run_name = parent_name(tags, overrides, swept)
        self._launcher = params["sweep.launcher"]
        self._started_ms = _now_ms()
        self._optimized = OmegaConf.select(config, "optimized_metric", default=None)
        try:
            self._start_parent(tracker, sweep_dir, sid, params, tags)
        except Exception as exc:
            # A tracking server that is down must not stop the sweep: its jobs keep their
            # own tracking data in the outbox (heta-eval-sync), without a parent run.
            refused = access_problem(tracker.uri, exc, tracker.experiment)
            if refused:
                log.warning(
                    "MLflow parent run of sweep %s not created: %s. The jobs keep their "
                    "tracking data in %s/tracking_outbox (upload it once you have access "
                    "with: heta-eval-sync --root %s)",
                    sweep_dir,
                    refused,
                    tracker.root,
                    tracker.root,
                )
            else:
                log.warning(
                    "MLflow parent run of sweep %s not created (%s: %s); the jobs run without "
                    "a parent run and keep their tracking data in %s/tracking_outbox if MLflow "
                    "stays unreachable (upload with: heta-eval-sync --root %s)",
                    sweep_dir,
                    type(exc).__name__,
                    str(exc).splitlines()[0][:300] if str(exc) else "",
                    tracker.root,
                    tracker.root,
                )
            if self._armed:
                self._at_exit()
                self._disarm()

    def _start_parent(
        self,
        tracker: Any,
        sweep_dir: Path,
        sid: str,
        params: dict[str, str],
        tags: dict[str, str],
    ) -> None:
        """Create (or resume) the parent run, arm its ending and let the jobs find it."""
        # A parent that cannot be created raises (no outbox entry for it); once it exists,
        # an outage keeps its final status in the outbox.
        tracker.use_outbox = False
        # Creates the store and the experiment here, before any (parallel) job starts.
        experiment_id = tracker.experiment_id()
        previous = self._unfinished_parent(tracker.client, experiment_id, sid)
        if previous is None:
            name = self._run_name or f"sweep {sweep_dir.name}"
            tracker.start(run_name=name, config={}, tags=tags)
            self._arm(tracker, sweep_dir, sid)
            self._log_params(tracker.client, tracker.run_id, params, existing={})
            log.info("MLflow parent run %s for sweep %s", tracker.run_id, sweep_dir)
        else:
            tracker.run_id = previous.info.run_id
            tracker.client.update_run(tracker.run_id, status="RUNNING")
            self._arm(tracker, sweep_dir, sid)
            attempts = int(previous.data.tags.get("heta_eval.sweep_attempts", "1")) + 1
            tags["heta_eval.sweep_attempts"] = str(attempts)
            self._log_params(tracker.client, tracker.run_id, params, previous.data.params)
            log.info(
                "MLflow parent run %s (%s, sweep_id %s) resumed for sweep %s",
                tracker.run_id,
                previous.info.status,
                sid,
                sweep_dir,
            )
        self._set_tags(tracker.client, tracker.run_id, tags)
        tracker.use_outbox = True

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if not self._armed:
            return
        self._disarm()
        status = "FINISHED"
        try:
            unfinished = [row for row in self._summarise() if not row.ok]
            if unfinished:
                status = "FAILED"  # a sweeper that tolerates failures (Optuna) got here
                log.warning(
                    "sweep run %s ends FAILED: %s",
                    self._tracker.run_id,
                    "; ".join(
                        f"{row.run_name or row.run_id} is {row.status}"
                        + (f" ({row.error})" if row.error else "")
                        for row in unfinished
                    ),
                )
        except Exception as exc:  # the sweep ran; a missing summary does not fail it
            log.warning("could not summarise sweep run %s: %s", self._tracker.run_id, exc)
        try:
            self._tracker.end(status)  # an unreachable server: the status goes to the outbox
        except Exception as exc:
            log.warning("could not end sweep run %s: %s", self._tracker.run_id, exc)

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
            if parent_run_id(sweep_dir) is None:
                return
            failed = job_return.status == JobStatus.FAILED
            error = getattr(job_return, "_return_value", None) if failed else None
            record = {
                "num": hydra_cfg.job.num,
                "status": job_return.status.name,
                "overrides": [mask_override(str(o)) for o in job_return.overrides or []],
                "error": f"{type(error).__name__}: {error}" if error is not None else None,
            }
            jobs = sweep_dir / JOBS_DIR
            jobs.mkdir(exist_ok=True)
            tmp = jobs / f".{hydra_cfg.job.num}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(record), encoding="utf-8")
            os.replace(tmp, jobs / f"{hydra_cfg.job.num}.json")
        except Exception as exc:  # a record is a convenience; never fail a job over it
            log.warning("could not record the job's outcome: %s", exc)

    # -- internals -------------------------------------------------------------------------

    @staticmethod
    def _unfinished_parent(client: Any, experiment_id: str, sid: str) -> Any:
        """The latest parent run of this sweep, if it did not finish."""
        found = client.search_runs(
            [experiment_id],
            filter_string=(
                f"tags.`{SWEEP_ID_TAG}` = '{sid}' and tags.`{KIND_TAG}` = '{SWEEP_KIND}'"
            ),
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        return found[0] if found and found[0].info.status != "FINISHED" else None

    @staticmethod
    def _log_params(
        client: Any, run_id: str, params: Mapping[str, str], existing: Mapping[str, str]
    ) -> None:
        from mlflow.entities import Param

        # Params cannot change; on a resumed parent, keep the first attempt's values.
        new = [Param(k, param_value(v)) for k, v in params.items() if k not in existing]
        for i in range(0, len(new), 100):
            client.log_batch(run_id, params=new[i : i + 100])

    @staticmethod
    def _set_tags(client: Any, run_id: str, tags: Mapping[str, str]) -> None:
        from mlflow.entities import RunTag

        items = [RunTag(k, str(v)) for k, v in tags.items()]
        for i in range(0, len(items), TAGS_PER_BATCH):
            client.log_batch(run_id, tags=items[i : i + TAGS_PER_BATCH])

    def _arm(self, tracker: Any, sweep_dir: Path, sid: str) -> None:
        """The parent run exists: end it at exit, and let the jobs find it."""
        self._tracker = tracker
        self._sweep_dir = sweep_dir
        self._armed = True
        atexit.register(self._at_exit)
        self._exit_on_signals()
        (sweep_dir / SWEEP_ID_FILE).write_text(sid, encoding="utf-8")
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
        client, run_id = self._tracker.client, self._tracker.run_id
        try:
            parent = client.get_run(run_id)
            if parent.info.status != "RUNNING":
                return
            if self._launcher in LOCAL_LAUNCHERS:
                self._end_orphans(client, parent.info.experiment_id, run_id)
            self._summarise()
        except Exception as exc:
            log.warning("could not summarise sweep run %s: %s", run_id, exc)
        try:
            self._tracker.end(self._exit_status)
        except Exception as exc:
            log.warning("could not end sweep run %s: %s", run_id, exc)

    def _end_orphans(self, client: Any, experiment_id: str, run_id: str) -> None:
        """Child runs of this attempt that a killed local worker left RUNNING: KILLED."""
        for child in self._children(client, experiment_id, run_id):
            started = child.info.start_time or 0
            if child.info.status == "RUNNING" and started >= self._started_ms:
                client.set_terminated(child.info.run_id, status="KILLED")

    def _summarise(self) -> list[SweepRow]:
        """Log the sweep's summary to the parent and print its jobs' table (`sweep_end`)."""
        assert self._sweep_dir is not None
        return summarise_sweep(self._tracker, self._sweep_dir, self._optimized, self._suite)

    @staticmethod
    def _children(client: Any, experiment_id: str, run_id: str) -> list[Any]:
        return child_runs(client, experiment_id, run_id)


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)
