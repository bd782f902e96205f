"""The MLflow tracker worker (`python -m heta_eval.run.tracker_worker`, started by
`TrackerProcess`).

It imports MLflow at once, then reads JSON lines from its input. The first is
`{"op": "init", "spec": TRACKING SPEC, "log_level": N}`: it creates the tracker from the spec
(the unmasked `tracking` config, never written anywhere) and connects it. Each later line is
a call, `{"op": "start" | "resume" | "report" | "log_report" | "end" | "describe", ...}`
(`report` sends the report ahead, to be read while the artifacts are written). Every line,
the first included, gets one answer line, in order: `{"value": ..., "run_id": ...}` or
`{"error": "Type: message", "run_id": ...}`. Log records of level `log_level` and above go
out between answers as `{"log": [LOGGER, LEVEL, MESSAGE]}`.

Its input closing (the run ended, or its process was killed) ends it once the calls already
read are done, without ending the tracking run: a killed evaluation's run stays RUNNING and
its rerun continues it. Ctrl-C and SIGTERM are left to the run's process, which ends the run
KILLED through this worker (a SIGTERM sent to the whole process group must not take the
worker away first).

The `heta-eval` command starts it before Hydra composes the configuration (`start_early`),
for the run to adopt (`take_early`): this module imports nothing but the standard library
until it runs as the worker.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

MODULE = "heta_eval.run.tracker_worker"
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
    if op in ("report", "log_report") and "report" in call:
        from heta_eval.records import EvaluationReport

        kept["report"] = EvaluationReport.model_validate_json(call["report"])
    if op == "report":
        return None
    if op == "log_report":
        report = kept.pop("report")
        artifacts = {name: Path(path) for name, path in call["artifacts"].items()}
        tracker.log_report(report, artifacts)
        return None
    if op == "end":
        tracker.end(call["status"])
        return None
    if op == "describe":
        return str(tracker.describe())
    raise ValueError(f"unknown call {op!r}")


def main() -> int:
    """Serve the calls of one run; 0 when the input closes, 1 when the tracker cannot be
    created (the run's process then tracks in-process)."""
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
    first = sys.stdin.readline()
    if not first:
        return 0
    try:
        init = json.loads(first)
        handler = _Forward(channel, int(init.get("log_level", logging.INFO)))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(handler.level)
        from heta_eval.config.components import instantiate

        tracker = instantiate(init["spec"])
        tracker.connect()
    except Exception as exc:
        channel.send({"error": _error(exc), "run_id": None})
        return 1
    channel.send({"value": "ready", "run_id": tracker.run_id})
    kept: dict[str, Any] = {}
    for line in sys.stdin:
        try:
            value = _call(tracker, json.loads(line), kept)
        except Exception as exc:
            channel.send(_failure(exc, tracker.run_id))
        else:
            channel.send({"value": value, "run_id": tracker.run_id})
    return 0


if __name__ == "__main__":
    status = main()
    # Every call is answered and every write committed: end without the interpreter's
    # teardown of MLflow and SQLAlchemy, which the run's process would wait for.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
