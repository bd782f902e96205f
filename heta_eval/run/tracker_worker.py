"""The MLflow tracker worker (`python -m heta_eval.run.tracker_worker`, started by
`TrackerProcess`).

It imports MLflow at once, then reads JSON lines from its input. Each names the run it is
for (`"tracker": KEY`: one worker serves the runs of a sweep one after another, MLflow
imported and its store opened once). A run's first call is
`{"op": "init", "spec": TRACKING SPEC, "log_level": N}`: it creates the run's tracker from the
spec (the unmasked `tracking` config, never written anywhere) and connects it. Its later calls
are `{"op": "start" | "resume" | "report" | "log_report" | "finish" | "log_artifact" | "end" |
"describe" | "sweep_start" | "sweep_end", ...}`: `report` sends the report ahead, to be read
while the artifacts are written; `finish` logs the report, records the completion and ends
the run in one call; a call with `"forget": true` is the run's last; the `sweep_` calls open
and close a sweep's parent run (`tracking.sweep_parent.sweep_call`). Every line gets one
answer line, in order: `{"value": ..., "run_id": ...}` or `{"error": "Type: message",
"run_id": ...}`. Log records of level `log_level` and above go out between answers as
`{"log": [LOGGER, LEVEL, MESSAGE]}`.

Its input closing (the run or the sweep ended, or its process was killed) ends it once the
calls already read are done, without ending the tracking run: a killed evaluation's run
stays RUNNING and its rerun continues it. Ctrl-C and SIGTERM are left to the run's process,
which ends the run KILLED through this worker (a SIGTERM sent to the whole process group
must not take the worker away first).

The `heta-eval` command starts it before Hydra composes the configuration (`start_early`),
for the run to adopt (`take_early`): this module imports nothing but the standard library
until it runs as the worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

MODULE = "heta_eval.run.tracker_worker"
PARENT_PLACEHOLDER = "@sweep-parent"  # as `run.sweep_workers.PARENT_PLACEHOLDER`
SWEEP_KEY = "sweep"  # the tracker of a sweep's parent run (`run.parent_process`)
_early: subprocess.Popen[str] | None = None


def spawn(module: str = MODULE) -> subprocess.Popen[str]:
    """Start a worker with its own pipes (none of this process's streams inherited)."""
    return subprocess.Popen(
        [sys.executable, "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )


def start_early() -> None:
    """Start the worker of the run this process is about to make, so that MLflow's import
    overlaps composing the configuration too; a worker never taken ends with this process
    (its input closes)."""
    global _early
    if _early is None:
        try:
            _early = spawn()
        except OSError:
            _early = None


def take_early() -> subprocess.Popen[str] | None:
    """The worker `start_early` started, if it is still running (once)."""
    global _early
    worker, _early = _early, None
    if worker is not None and worker.poll() is not None:
        for stream in (worker.stdin, worker.stdout, worker.stderr):
            if stream is not None:
                stream.close()
        return None
    return worker


def drop_early() -> None:
    """Stop the worker `start_early` started, if any (the run is tracked elsewhere)."""
    worker = take_early()
    if worker is not None:
        with contextlib.suppress(OSError):
            worker.kill()
        worker.wait()
        for stream in (worker.stdin, worker.stdout, worker.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class _Channel:
    """The answer stream: one whole line per message, from any thread; a reader that is gone
    (the run's process was killed) makes every later message a no-op."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream: IO[str] | None = stream
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, default=str) + "\n"
        with self._lock:
            if self._stream is None:
                return
            try:
                self._stream.write(line)
                self._stream.flush()
            except (OSError, ValueError):
                self._stream = None


class _Forward(logging.Handler):
    """Sends log records to the run's process, which logs them with its own handlers."""

    def __init__(self, channel: _Channel, level: int) -> None:
        super().__init__(level)
        self.channel = channel

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + self.format(record).split("\n", 1)[-1]
            self.channel.send({"log": [record.name, record.levelno, text]})
        except Exception:
            self.handleError(record)


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _failure(exc: BaseException, run_id: str | None) -> dict[str, Any]:
    """The answer for a failed call; an OSError (a full disk) keeps its errno and file, so
    the run says `cannot write FILE` as it does for its own files."""
    answer: dict[str, Any] = {"error": _error(exc), "run_id": run_id}
    if isinstance(exc, OSError) and exc.errno is not None:
        answer["errno"] = exc.errno
        answer["strerror"] = exc.strerror
        answer["filename"] = None if exc.filename is None else str(exc.filename)
    return answer


def _call(tracker: Any, call: dict[str, Any], kept: dict[str, Any]) -> Any:
    op = call["op"]
    if op == "start":
        tracker.start(
            run_name=call["run_name"],
            config=call["config"],
            tags=call["tags"],
            parent_run_id=call.get("parent_run_id"),
            start_time=call.get("start_time"),
        )
        if call.get("state_dir"):
            from heta_eval.run.state import save_tracking_run

            # Here, not in the run's process: saved even if that process is killed before
            # reading this answer, so that its rerun continues this run.
            save_tracking_run(Path(call["state_dir"]), tracker.uri, tracker.run_id)
        return None
    if op == "resume":
        return bool(tracker.resume(call["run_id"]))
    if op in ("report", "log_report", "finish") and "report" in call:
        from heta_eval.records import EvaluationReport

        kept["report"] = EvaluationReport.model_validate_json(call["report"])
    if op == "report":
        return None
    if op == "log_report":
        report = kept.pop("report")
        artifacts = {name: Path(path) for name, path in call["artifacts"].items()}
        tracker.log_report(report, artifacts)
        return None
    if op == "finish":
        finish_run(tracker, kept.pop("report"), call)
        return None
    if op == "log_artifact":
        tracker.log_artifact(Path(call["path"]))
        return None
    if op in ("sweep_start", "sweep_end"):
        from heta_eval.tracking.sweep_parent import sweep_call

        return sweep_call(tracker, call)
    if op == "end":
        tracker.end(call["status"])
        return None
    if op == "describe":
        if call.get("headline"):
            tracker.set_headline(call["headline"])
        return str(tracker.describe())
    raise ValueError(f"unknown call {op!r}")


def finish_run(tracker: Any, report: Any, call: dict[str, Any]) -> None:
    """A run's last steps in one call, in the order a run in its own process takes them:
    log the report and artifacts, record the completion in the run state (`state_dir`;
    only once the tracking run has everything, so that a sweep killed before this leaves
    the job to be resumed, not reused), end the run with `status`. A report that cannot be
    logged ends the run FAILED and raises."""
    artifacts = {name: Path(path) for name, path in call["artifacts"].items()}
    try:
        tracker.log_report(report, artifacts)
        if call.get("state_dir"):
            from heta_eval.run.state import save_completion

            save_completion(Path(call["state_dir"]), artifacts["report"], report, tracker.run_id)
    except BaseException:
        tracker.end("FAILED")
        raise
    tracker.end(call["status"])


class Session:
    """The trackers of one caller (a run, or the runs of a sweep), by the `tracker` key of
    its calls; `answer` turns one call line into its answer. Shared by this worker and the
    tracking service (`run.tracking_service`), which keeps one session per connection."""

    def __init__(self, log_level: Callable[[int], None]) -> None:
        self._log_level = log_level  # called with the level an `init` asks for
        self.trackers: dict[str, Any] = {}
        self.kept: dict[str, dict[str, Any]] = {}
        self.first = True
        self.failed = False  # the first call failed: nothing more is served

    def answer(self, line: str) -> dict[str, Any]:
        """The answer to one call line (after it, a `"forget": true` call's tracker is
        dropped); a failing first call sets `failed`."""
        call: dict[str, Any] = {}
        key = None
        try:
            call = json.loads(line)
            key = str(call.get("tracker", ""))
            if call["op"] == "init":
                self._log_level(int(call.get("log_level", logging.INFO)))
                from heta_eval.config.components import instantiate

                tracker = instantiate(call["spec"])
                tracker.connect()
                self.trackers[key] = tracker
                self.kept[key] = {}
                value: Any = "ready"
            else:
                if call.get("parent_run_id") == PARENT_PLACEHOLDER:
                    # A sweep job started before its parent's id came back: the parent was
                    # opened here, by the call read before this one's.
                    parent = self.trackers.get(SWEEP_KEY)
                    call["parent_run_id"] = parent.run_id if parent is not None else None
                value = _call(self.trackers[key], call, self.kept[key])
        except Exception as exc:
            if self.first:
                self.failed = True
                return {"error": _error(exc), "run_id": None}
            tracker = self.trackers.get(key or "")
            answer = _failure(exc, tracker.run_id if tracker is not None else None)
        else:
            answer = {"value": value, "run_id": self.trackers[key].run_id}
        finally:
            self.first = False
            if call.get("forget"):  # the run's last call: its tracker is not needed any more
                self.trackers.pop(key or "", None)
                self.kept.pop(key or "", None)
        return answer


def main() -> int:
    """Serve the calls of one run, or of the runs of a sweep; 0 when the input closes, 1 when
    the first tracker cannot be created (the run's process then tracks in-process)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # Answers go to a copy of the output; whatever else prints lands on stderr, never in
    # the answers.
    channel = _Channel(os.fdopen(os.dup(1), "w", encoding="utf-8"))
    os.dup2(2, 1)
    try:
        import mlflow.tracking  # noqa: F401  (the slow part, done before the spec arrives)
    except Exception as exc:
        channel.send({"error": _error(exc), "run_id": None})
        return 1
    handler: list[_Forward] = []

    def log_level(level: int) -> None:
        handler[:] = [_log_to(channel, level, handler[0] if handler else None)]

    session = Session(log_level)
    for line in sys.stdin:
        answer = session.answer(line)
        channel.send(answer)
        if session.failed:
            return 1
    return 0


def _log_to(channel: _Channel, level: int, handler: _Forward | None) -> _Forward:
    """Forward log records of `level` and above (the lowest level asked for so far)."""
    root = logging.getLogger()
    if handler is None:
        handler = _Forward(channel, level)
        root.addHandler(handler)
    handler.setLevel(min(level, handler.level))
    root.setLevel(handler.level)
    return handler


if __name__ == "__main__":
    status = main()
    # Every call is answered and every write committed: end without the interpreter's
    # teardown of MLflow and SQLAlchemy, which the run's process would wait for.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
