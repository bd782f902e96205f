"""MLflow tracking in a worker process, off the run's critical path.

Importing MLflow, opening its store and creating the run cost about two seconds of Python;
in a thread of the run's process they would hold the GIL the benchmark load needs.
`TrackerProcess` starts `python -m heta_eval.run.tracker_worker` when the run starts (or
adopts the one `heta-eval` started before composing its configuration), which does all of
that on another core while this process loads and evaluates: `start` is sent without
waiting (the worker saves the run id into the run state itself, and reads its input to the
end even when this process is gone, so a killed run's rerun continues that run), and only
the calls that need an answer (`resume`, `log_report`, `end`, `describe`, reading `run_id`)
wait: the first is reading `run_id` for the report, once the evaluation is done.

The jobs of a sweep that run one after another in one process share one worker
(`run.sweep_workers`): each job's run is its own tracker there (`"tracker": KEY` on each
call), MLflow is imported and the store opened once for the sweep, and a job hands its last
steps over in one call (`finish`: log the report, record the completion, end the run) and
does not wait for them; the sweep's end waits for all of them.

The worker has its own pipes: nothing of ours is inherited, so a killed run leaves no
process holding its output open, and the worker, seeing its input close, exits without
ending the tracking run (the rerun continues it). A worker that cannot start, or dies, or
stops answering is replaced by the in-process tracker, which continues the run the worker
started (or starts it), with a warning; a call the tracker itself fails raises as it would
in-process, as a `TrackerWorkerError` naming the original exception.
"""

from __future__ import annotations

import itertools
import logging
import subprocess
from collections import deque
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heta_eval.config.secrets import scrub, secret_values
from heta_eval.run import sweep_workers, tracker_worker
from heta_eval.run.worker_link import WorkerGone, WorkerLink
from heta_eval.tracking.mlflow_tracker import MlflowTracker, report_for_logging

if TYPE_CHECKING:
    from heta_eval.records import EvaluationReport
    from heta_eval.run.assembly import RunComponents

log = logging.getLogger(__name__)

WORKER = tracker_worker.MODULE
CALL_TIMEOUT = 600.0  # seconds for one answer: a slow server's retries, large artifacts
_keys = itertools.count()  # one key per run a worker serves


class TrackerWorkerError(RuntimeError):
    """A tracker call failed in the worker (the message names the original exception)."""


_WorkerGone = WorkerGone


def spawn_link() -> WorkerLink:
    """A worker: the one `heta-eval` started early (the first run only), else a new one."""
    early = tracker_worker.take_early() if WORKER == tracker_worker.MODULE else None
    return WorkerLink(early or tracker_worker.spawn(WORKER))


def service_or_worker(uri: str, idle_seconds: float) -> WorkerLink:
    """A connection to the tracking service for `uri` (`run.service_link`; started if none
    runs); when none can be reached, a worker of this run's own, with a warning."""
    from heta_eval.run import service_link

    try:
        connection = service_link.connect(uri, idle_seconds)
    except (service_link.ServiceUnavailable, OSError) as exc:
        log.warning(
            "MLflow tracking service not reached (%s); this run tracks in a worker process of "
            "its own",
            exc,
        )
        return spawn_link()
    tracker_worker.drop_early()  # a worker started before the configuration was known
    if connection.replaying:
        log.warning(
            "%s is logging %d run(s) that a tracking service which ended first had taken over "
            "but not logged (spool in %s; tagged heta_eval.tracking.replayed): %s",
            connection,
            len(connection.replaying),
            connection.directory / "spool",
            ", ".join(connection.replaying),
        )
    return WorkerLink(connection)  # type: ignore[arg-type]  (a Popen's shape)


PATH_FIELDS = ("state_dir", "path")


def absolute_paths(call: dict[str, Any]) -> dict[str, Any]:
    """`call` with its file paths absolute in this process's working directory (the
    tracking service, or a worker started earlier, may have another one)."""
    fixed = {k: str(Path(v).absolute()) for k in PATH_FIELDS if isinstance(v := call.get(k), str)}
    if isinstance(call.get("artifacts"), dict):
        fixed["artifacts"] = {n: str(Path(p).absolute()) for n, p in call["artifacts"].items()}
    return {**call, **fixed} if fixed else call


class TrackerProcess:
    """The `Tracker` of a run whose `MlflowTracker` runs in a worker process.

    Built from the in-process tracker (`local`, whose `uri` and `root` it keeps) and the
    unmasked tracking spec the worker creates the same tracker from; `connect` starts the
    worker (or, in a sweep's process, joins the sweep's) and returns at once, `close` stops
    it (leaves the sweep's running). See the module docstring.
    """

    def __init__(
        self, local: MlflowTracker, spec: Mapping[str, Any], timeout: float = CALL_TIMEOUT
    ) -> None:
        self.uri: str | None = local.uri
        self.timeout = timeout
        self._local = local
        # The parent's resolved root and uri: the worker must not resolve them again (the
        # working directory or MLFLOW_TRACKING_URI may have changed since).
        self._spec = {**spec, "root": str(local.root), "uri": local.uri}
        self._secrets = secret_values(spec)
        self._service = bool(spec.get("service")) and local.uri is not None
        self._idle = float(spec.get("service_idle_seconds") or 300.0)
        self._key = f"{next(_keys)}"
        self._link: WorkerLink | None = None
        self._shared = False
        # Calls sent whose answers are not read yet, with their futures.
        self._waiting: deque[tuple[str, Future[dict[str, Any]]]] = deque()
        self._run_id: str | None = None
        self._prepared: EvaluationReport | None = None  # the report the worker has
        self._where: str | None = None  # `describe`, asked before the run was handed over
        self._in_process = False
        # What the run asked for, to redo in-process if the worker goes away:
        # ("start", (kwargs, state_dir)) or ("resume", run id).
        self._begun: tuple[str, Any] | None = None

    @classmethod
    def for_components(cls, components: RunComponents) -> TrackerProcess | None:
        """A proxy for the components' tracker when it is an MlflowTracker created from a
        spec; None otherwise (other trackers run in-process)."""
        tracker, spec = components.tracker, components.tracking_spec
        if isinstance(tracker, MlflowTracker) and spec and "_target_" in spec:
            return cls(tracker, spec)
        return None

    @property
    def _worker(self) -> subprocess.Popen[str] | None:
        """The worker process (None once gone or closed)."""
        return self._link.worker if self._link is not None else None

    @property
    def spools(self) -> bool:
        """Whether the run's last steps can be handed to the tracking service durably
        (`finish_durably`): connected to the service, not tracking in-process."""
        worker = self._worker
        return (
            not self._in_process and worker is not None and not isinstance(worker, subprocess.Popen)
        )

    @property
    def shared(self) -> bool:
        """Whether this run's worker is the sweep's, shared with the other jobs."""
        return self._shared and not self._in_process

    # -- the Tracker protocol -----------------------------------------------------------

    @property
    def run_id(self) -> str | None:  # type: ignore[override]
        """The run's id; waits for the worker's answers still outstanding."""
        if not self._in_process and self._waiting:
            try:
                self._drain()
            except _WorkerGone as gone:
                self._fail_over(gone)
        return self._local.run_id if self._in_process else self._run_id

    def connect(self) -> None:
        """Start the worker (it imports MLflow and opens the store), or join the sweep's;
        returns at once."""
        if self._link is not None or self._in_process:
            return
        try:
            if sweep_workers.enabled():
                self._link = sweep_workers.tracker_link(spawn_link)
                self._shared = True
            elif self._service:
                assert self.uri is not None
                self._link = service_or_worker(self.uri, self._idle)
            else:
                self._link = spawn_link()
        except OSError as exc:
            log.warning("MLflow tracking worker not started (%s); tracking in-process", exc)
            self._in_process = True
            return
        self._link.secrets |= self._secrets
        level = min(logging.getLogger().getEffectiveLevel(), log.getEffectiveLevel())
        try:
            self._send({"op": "init", "spec": self._spec, "log_level": level})
        except _WorkerGone as gone:
            self._fail_over(gone)

    def start(
        self,
        *,
        run_name: str,
        config: Mapping[str, Any],
        tags: Mapping[str, str],
        parent_run_id: str | None = None,
        state_dir: Path | None = None,
        start_time: float | None = None,
    ) -> None:
        """Start the run in the worker without waiting; with `state_dir`, the worker saves
        the run id there (`heta_eval.run.state.save_tracking_run`) once the run exists."""
        kwargs = {
            "run_name": run_name,
            "config": dict(config),
            "tags": dict(tags),
            "parent_run_id": parent_run_id,
            "start_time": start_time,
        }
        self._begun = ("start", (kwargs, state_dir))
        if not self._in_process:
            try:
                worker = self._worker
                if state_dir is not None and worker is not None:
                    from heta_eval.run.state import note_tracking_start

                    # A rerun after this process is killed waits for what the worker saves.
                    note_tracking_start(state_dir, self.uri, worker.pid)
                self._send({"op": "start", **kwargs, "state_dir": state_dir and str(state_dir)})
                return
            except _WorkerGone as gone:
                self._fail_over(gone)  # starts the run in-process
                return
        self._start_here()

    def resume(self, run_id: str) -> bool:
        self._begun = ("resume", run_id)
        if not self._in_process:
            try:
                return bool(self._ask({"op": "resume", "run_id": run_id}))
            except _WorkerGone as gone:
                self._fail_over(gone)
        return self._local.resume(run_id)

    def prepare_report(self, report: EvaluationReport) -> None:
        """Send `report` (as the tracker logs it) ahead of `log_report`, for the worker to
        read it meanwhile (not to the tracking service, which gets it in the
        `finish_durably` call that it writes to its spool)."""
        if self._in_process or self.spools:
            return
        try:
            self._send({"op": "report", "report": report_for_logging(report).model_dump_json()})
            self._prepared = report
        except _WorkerGone as gone:
            self._fail_over(gone)

    def log_report(self, report: EvaluationReport, artifacts: Mapping[str, Path]) -> None:
        if not self._in_process:
            call: dict[str, Any] = {
                "op": "log_report",
                "artifacts": {name: str(path) for name, path in artifacts.items()},
            }
            if report is not self._prepared:
                call["report"] = report_for_logging(report).model_dump_json()
            self._prepared = None
            try:
                self._ask(call)
                return
            except _WorkerGone as gone:
                self._fail_over(gone)
        self._local.log_report(report, artifacts)

    def hand_over(
        self,
        report: EvaluationReport,
        artifacts: Mapping[str, Path],
        *,
        status: str,
        state_dir: Path | None,
        more: bool = False,
    ) -> None:
        """A sweep job's last steps, handed to the shared worker without waiting: log the
        report and `artifacts`, record the completion in `state_dir` (the worker does, once
        the run has everything), end the run with `status`. `describe` is asked first (its
        answer is ready at once). With `more`, a file follows (`log_artifact`). A failure
        is logged when the worker answers (the job has gone on by then). Only for a shared
        worker; otherwise (or once tracking is in-process) this waits, as a run does."""
        from heta_eval.tracking.naming import headline_metric

        if not self.shared:
            self._finish_here(report, artifacts, status=status, state_dir=state_dir)
            return
        try:
            self._where = str(self._ask({"op": "describe", "headline": headline_metric(report)}))
            call: dict[str, Any] = {
                "op": "finish",
                "artifacts": {name: str(path) for name, path in artifacts.items()},
                "status": status,
                "state_dir": state_dir and str(state_dir),
                "forget": not more,
            }
            if report is not self._prepared:
                # The report as the tracker logs it (`report_for_logging`), not report.json:
                # the worker would read and check every retrieved item of the whole report
                # to show five documents a case. report.json goes to MLflow as a file. Sent
                # with this call, not ahead: the next job's `describe` would wait for the
                # worker to read it.
                call["report"] = report_for_logging(report).model_dump_json()
            self._prepared = None
            finishing = self._detach(call)
            if state_dir is not None:
                sweep_workers.finishing(state_dir, finishing)
        except _WorkerGone as gone:
            self._fail_over(gone)
            self._finish_here(report, artifacts, status=status, state_dir=state_dir)

    def finish_durably(
        self, report: EvaluationReport, artifacts: Mapping[str, Path], *, status: str
    ) -> str | None:
        """Hand the run's last steps (log the report and `artifacts`, end the run with
        `status`) to the tracking service, which answers once it has written them to its
        spool (fsynced) and logs them after: the spool file's path, the run not waiting for
        the logging. The call carries the report as the tracker logs it
        (`report_for_logging`): the service, and a later service replaying the spool, read
        that, never the whole report.json (logged as a file). None when that cannot be done
        (not connected to the service, or it could not spool): the caller logs and ends the
        run itself."""
        from heta_eval.tracking.naming import headline_metric

        if not self.spools:
            return None
        try:
            self._where = str(self._ask({"op": "describe", "headline": headline_metric(report)}))
            answer = self._ask(
                {
                    "op": "finish",
                    "spool": True,
                    "artifacts": {name: str(path) for name, path in artifacts.items()},
                    "report": report_for_logging(report).model_dump_json(),
                    "status": status,
                    "forget": True,
                }
            )
        except TrackerWorkerError as exc:
            log.warning("MLflow tracking not handed to the service (%s); logging it now", exc)
            return None
        except _WorkerGone as gone:
            self._fail_over(gone)
            return None
        spooled = str(answer["spooled"])
        self._where = (
            f"{self._where}\nMLflow logging: handed to the tracking service (pid "
            f"{self._worker_pid()}), which logs the run after this process ends; pending "
            f"while {spooled} exists"
        )
        return spooled

    def _worker_pid(self) -> int | None:
        worker = self._worker
        return worker.pid if worker is not None else None

    def log_artifact(self, path: Path) -> None:
        """Log `path` to the run after `hand_over(..., more=True)`, without waiting."""
        if self.shared:
            try:
                self._detach({"op": "log_artifact", "path": str(path), "forget": True})
                return
            except _WorkerGone as gone:
                self._fail_over(gone)
        if self._in_process:
            self._local.log_artifact(path)
        else:
            self._ask({"op": "log_artifact", "path": str(path), "forget": True})

    def _finish_here(
        self,
        report: EvaluationReport,
        artifacts: Mapping[str, Path],
        *,
        status: str,
        state_dir: Path | None,
    ) -> None:
        """`hand_over`'s steps, one after another, waiting for each."""
        from heta_eval.run.state import save_completion

        try:
            self.log_report(report, artifacts)
            if state_dir is not None:
                save_completion(state_dir, artifacts["report"], report, self.run_id)
        except BaseException:
            self.end("FAILED")
            raise
        self.end(status)

    def end(self, status: str = "FINISHED") -> None:
        if not self._in_process:
            try:
                self._ask({"op": "end", "status": status})
                return
            except _WorkerGone as gone:
                self._fail_over(gone)
        self._local.end(status)

    def describe(self) -> str:
        if self._where is not None:
            return self._where
        if not self._in_process:
            try:
                return str(self._ask({"op": "describe"}))
            except _WorkerGone as gone:
                self._fail_over(gone)
        return self._local.describe()

    def close(self) -> None:
        """Stop the worker: at once when every call was answered or it has nothing left to
        do but connect, else once its outstanding calls are done (its input closed, it
        exits by itself). The sweep's worker is left running for the next job."""
        if self._shared:  # its report.html may still be logged through it
            return
        link, self._link = self._link, None
        if link is None:
            return
        if all(op == "init" for op, _ in self._waiting):
            link.kill()
        link.close(self.timeout)

    # -- talking to the worker ----------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        if self._link is None:
            raise _WorkerGone("is not running")
        future = self._link.send({**absolute_paths(message), "tracker": self._key})
        self._waiting.append((str(message["op"]), future))

    def _detach(self, message: dict[str, Any]) -> Future[dict[str, Any]]:
        """Send a call whose answer nobody waits for: a failure is logged when it comes."""
        if self._link is None:
            raise _WorkerGone("is not running")
        self._drain()  # an earlier call's failure belongs to the job, which is still here
        future = self._link.send({**absolute_paths(message), "tracker": self._key})
        op, secrets = str(message["op"]), self._secrets

        def said(done: Future[dict[str, Any]]) -> None:
            try:
                answer = done.result()
            except WorkerGone as gone:
                answer = {"error": f"the MLflow tracking worker {gone}", "run_id": self._run_id}
            if "error" in answer:
                log.warning(
                    "MLflow tracking (%s) of run %s failed: %s",
                    op,
                    answer.get("run_id") or self._run_id,
                    scrub(str(answer["error"]), secrets),
                )

        future.add_done_callback(said)
        return future

    def _ask(self, message: dict[str, Any]) -> Any:
        self._send(message)
        return self._drain()

    def _drain(self) -> Any:
        """Read the outstanding answers, in order; the last one's value. An error of an
        earlier call (a `start` sent without waiting) raises here, once."""
        value: Any = None
        while self._waiting:
            op, future = self._waiting[0]
            try:
                answer = future.result(timeout=self.timeout)
            except TimeoutError:
                raise _WorkerGone(f"did not answer {op!r} within {self.timeout:.0f} s") from None
            finally:
                if future.done():
                    self._waiting.popleft()
            self._run_id = answer.get("run_id")
            if "error" in answer:
                message = scrub(str(answer["error"]), self._secrets)
                if op == "init":
                    raise _WorkerGone(f"could not create the tracker ({message})")
                failed = TrackerWorkerError(f"MLflow tracking ({op}) failed: {message}")
                if isinstance(answer.get("errno"), int):
                    # A full disk in the worker is a full disk of the run: said as one, naming
                    # the file (else the local store's database).
                    uri = self.uri or ""
                    where = answer.get("filename") or (
                        uri.removeprefix("sqlite:///") if uri.startswith("sqlite:///") else None
                    )
                    raise OSError(
                        answer["errno"], answer.get("strerror") or message, where
                    ) from failed
                raise failed
            value = answer.get("value")
        return value

    # -- without the worker ---------------------------------------------------------------

    def _fail_over(self, gone: _WorkerGone) -> None:
        """Track in this process from now on, continuing what the worker started."""
        link, self._link = self._link, None
        status = ""
        last: list[str] = []
        what = "the MLflow tracking worker"
        if link is not None:
            sweep_workers.discard(link)
            link.kill()
            link.release()
            if isinstance(link.worker, subprocess.Popen):
                status = f", exit status {link.worker.returncode}"
            else:  # a connection to the tracking service
                what = str(link.worker)
            last = [line for line in link.stderr if line.strip()][-3:]
        log.warning(
            "%s %s%s%s; tracking goes on in this process",
            what,
            gone,
            status,
            (": " + " | ".join(last)) if last else "",
        )
        self._waiting.clear()
        self._in_process = True
        if self._begun is None:
            return
        # The worker created the run (or found it): continue that one; a start it did not
        # confirm is done here (a `resume` it did not answer is asked again by the caller).
        if self._run_id is not None and self._local.resume(self._run_id):
            return
        if self._begun[0] == "start":
            self._start_here()

    def _start_here(self) -> None:
        assert self._begun is not None and self._begun[0] == "start"
        kwargs, state_dir = self._begun[1]
        parent = sweep_workers.resolve_parent(kwargs.get("parent_run_id"))
        self._local.start(**{**kwargs, "parent_run_id": parent})
        if state_dir is not None:
            from heta_eval.run.state import save_tracking_run

            save_tracking_run(state_dir, self._local.uri, self._local.run_id)
