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

The worker has its own pipes: nothing of ours is inherited, so a killed run leaves no
process holding its output open, and the worker, seeing its input close, exits without
ending the tracking run (the rerun continues it). A worker that cannot start, or dies, or
stops answering is replaced by the in-process tracker, which continues the run the worker
started (or starts it), with a warning; a call the tracker itself fails raises as it would
in-process, as a `TrackerWorkerError` naming the original exception.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from heta_eval.config.secrets import scrub, secret_values
from heta_eval.run import tracker_worker
from heta_eval.tracking.mlflow_tracker import MlflowTracker

if TYPE_CHECKING:
    from heta_eval.records import EvaluationReport
    from heta_eval.run.assembly import RunComponents

log = logging.getLogger(__name__)

WORKER = tracker_worker.MODULE
CALL_TIMEOUT = 600.0  # seconds for one answer: a slow server's retries, large artifacts
STDERR_LINES = 20  # the worker's last stderr lines, kept to say why it died


class TrackerWorkerError(RuntimeError):
    """A tracker call failed in the worker (the message names the original exception)."""


class _WorkerGone(Exception):
    """The worker exited, could not be written to, or stopped answering."""


class TrackerProcess:
    """The `Tracker` of a run whose `MlflowTracker` runs in a worker process.

    Built from the in-process tracker (`local`, whose `uri` and `root` it keeps) and the
    unmasked tracking spec the worker creates the same tracker from; `connect` starts the
    worker and returns at once, `close` stops it. See the module docstring.
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
        self._worker: subprocess.Popen[str] | None = None
        self._threads: list[threading.Thread] = []
        self._answers: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._waiting: deque[str] = deque()  # calls sent whose answers are not read yet
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._run_id: str | None = None
        self._prepared: EvaluationReport | None = None  # the report the worker has
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
        """Start the worker (it imports MLflow and opens the store); returns at once."""
        if self._worker is not None or self._in_process:
            return
        try:
            early = tracker_worker.take_early() if WORKER == tracker_worker.MODULE else None
            self._worker = early or tracker_worker.spawn(WORKER)
        except OSError as exc:
            log.warning("MLflow tracking worker not started (%s); tracking in-process", exc)
            self._in_process = True
            return
        assert self._worker.stdout is not None and self._worker.stderr is not None
        for target, stream, name in (
            (self._read_answers, self._worker.stdout, "tracker-answers"),
            (self._relay_stderr, self._worker.stderr, "tracker-stderr"),
        ):
            thread = threading.Thread(target=target, args=(stream,), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
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
                if state_dir is not None and self._worker is not None:
                    from heta_eval.run.state import note_tracking_start

                    # A rerun after this process is killed waits for what the worker saves.
                    note_tracking_start(state_dir, self.uri, self._worker.pid)
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
        """Send `report` ahead of `log_report`, for the worker to read it meanwhile."""
        if self._in_process:
            return
        try:
            self._send({"op": "report", "report": report.model_dump_json()})
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
                call["report"] = report.model_dump_json()
            self._prepared = None
            try:
                self._ask(call)
                return
            except _WorkerGone as gone:
                self._fail_over(gone)
        self._local.log_report(report, artifacts)

    def end(self, status: str = "FINISHED") -> None:
        if not self._in_process:
            try:
                self._ask({"op": "end", "status": status})
                return
            except _WorkerGone as gone:
                self._fail_over(gone)
        self._local.end(status)

    def describe(self) -> str:
        if not self._in_process:
            try:
                return str(self._ask({"op": "describe"}))
            except _WorkerGone as gone:
                self._fail_over(gone)
        return self._local.describe()

    def close(self) -> None:
        """Stop the worker: at once when every call was answered or it has nothing left to
        do but connect, else once its outstanding calls are done (its input closed, it
        exits by itself)."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        with contextlib.suppress(OSError, ValueError):
            assert worker.stdin is not None
            worker.stdin.close()
        if all(op == "init" for op in self._waiting):
            worker.kill()
        try:
            worker.wait(timeout=self.timeout if self._waiting else 10)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        self._release(worker)

    def _release(self, worker: subprocess.Popen[str]) -> None:
        """Join the threads reading a worker that has exited, close its pipes."""
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads = []
        for stream in (worker.stdin, worker.stdout, worker.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()

    # -- talking to the worker ----------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        worker = self._worker
        if worker is None or worker.stdin is None:
            raise _WorkerGone("is not running")
        try:
            worker.stdin.write(json.dumps(message, default=str) + "\n")
            worker.stdin.flush()
        except (OSError, ValueError) as exc:
            raise _WorkerGone(f"could not be written to ({exc})") from None
        self._waiting.append(str(message["op"]))

    def _ask(self, message: dict[str, Any]) -> Any:
        self._send(message)
        return self._drain()

    def _drain(self) -> Any:
        """Read the outstanding answers, in order; the last one's value. An error of an
        earlier call (a `start` sent without waiting) raises here, once."""
        value: Any = None
        while self._waiting:
            try:
                answer = self._answers.get(timeout=self.timeout)
            except queue.Empty:
                raise _WorkerGone(
                    f"did not answer {self._waiting[0]!r} within {self.timeout:.0f} s"
                ) from None
            if answer is None:
                raise _WorkerGone("exited")
            op = self._waiting.popleft()
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

    def _read_answers(self, stream: IO[str]) -> None:
        """Thread: answers to the queue, log records to this process's loggers."""
        try:
            for line in stream:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if "log" in message:
                    name, level, text = message["log"]
                    logging.getLogger(str(name)).log(int(level), scrub(str(text), self._secrets))
                else:
                    self._answers.put(message)
        except (OSError, ValueError):
            pass
        finally:
            self._answers.put(None)

    def _relay_stderr(self, stream: IO[str]) -> None:
        """Thread: the worker's stderr (MLflow's own messages, warnings) to ours."""
        with contextlib.suppress(OSError, ValueError):
            for line in stream:
                line = scrub(line, self._secrets)
                self._stderr.append(line.rstrip())
                sys.stderr.write(line)

    # -- without the worker ---------------------------------------------------------------

    def _fail_over(self, gone: _WorkerGone) -> None:
        """Track in this process from now on, continuing what the worker started."""
        worker, self._worker = self._worker, None
        if worker is not None:
            with contextlib.suppress(OSError):
                worker.kill()
            worker.wait()
            self._release(worker)
            status = f", exit status {worker.returncode}"
        else:
            status = ""
        last = [line for line in self._stderr if line.strip()][-3:]
        log.warning(
            "the MLflow tracking worker %s%s%s; tracking goes on in this process",
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
        self._local.start(**kwargs)
        if state_dir is not None:
            from heta_eval.run.state import save_tracking_run

            save_tracking_run(state_dir, self._local.uri, self._local.run_id)
