"""The pipe to a tracker worker process (`heta_eval.run.tracker_worker`): calls out, answers
back, one `Future` per call.

A worker answers every call, in the order it read them, with one line; log records it
forwards come between answers. `WorkerLink` writes calls under a lock and resolves each
call's future with its answer as the reader thread reads it, so that several users (the
runs of a sweep, one after another, each with a call still outstanding) share one worker
and each waits only for its own answers. The worker exiting resolves every outstanding
future with `WorkerGone`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import sys
import threading
from collections import deque
from concurrent.futures import Future
from typing import IO, Any

from heta_eval.config.secrets import scrub

STDERR_LINES = 20  # the worker's last stderr lines, kept to say why it died


class WorkerGone(Exception):
    """The worker exited, could not be written to, or stopped answering."""


class WorkerLink:
    """One tracker worker process and the futures of the calls it has not answered yet."""

    def __init__(self, worker: subprocess.Popen[str]) -> None:
        self.worker = worker
        self.secrets: set[str] = set()  # values scrubbed from what the worker says
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._lock = threading.Lock()
        self._pending: deque[Future[dict[str, Any]]] = deque()
        self._gone = False
        assert worker.stdout is not None and worker.stderr is not None
        self._threads = [
            threading.Thread(target=target, args=(stream,), name=name, daemon=True)
            for target, stream, name in (
                (self._read_answers, worker.stdout, "tracker-answers"),
                (self._relay_stderr, worker.stderr, "tracker-stderr"),
            )
        ]
        for thread in self._threads:
            thread.start()

    @property
    def alive(self) -> bool:
        """Whether the worker still runs and takes calls."""
        return not self._gone and self.worker.poll() is None and self.worker.stdin is not None

    def send(self, message: dict[str, Any]) -> Future[dict[str, Any]]:
        """Write one call; its answer resolves the returned future (`WorkerGone` when the
        worker exits first). Raises `WorkerGone` when the worker cannot be written to."""
        line = json.dumps(message, default=str) + "\n"
        with self._lock:
            stdin = self.worker.stdin
            if self._gone or stdin is None:
                raise WorkerGone("is not running")
            try:
                stdin.write(line)
                stdin.flush()
            except (OSError, ValueError) as exc:
                raise WorkerGone(f"could not be written to ({exc})") from None
            future: Future[dict[str, Any]] = Future()
            self._pending.append(future)
        return future

    def outstanding(self) -> list[Future[dict[str, Any]]]:
        """The futures of the calls not answered yet."""
        with self._lock:
            return list(self._pending)

    def wait(self, timeout: float) -> bool:
        """Wait until every call sent so far is answered (or the worker is gone); False when
        `timeout` seconds passed first."""
        for future in self.outstanding():
            try:
                future.exception(timeout=timeout)
            except TimeoutError:
                return False
        return True

    def close(self, timeout: float) -> None:
        """Close the worker's input (it exits once the calls it read are done) and wait for it
        (`timeout` seconds for the outstanding calls, then it is killed)."""
        with self._lock:
            stdin, self.worker.stdin = self.worker.stdin, None
        if stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()
        try:
            self.worker.wait(timeout=timeout if self.outstanding() else 10)
        except subprocess.TimeoutExpired:
            self.kill()
        self.release()

    def kill(self) -> None:
        """End the worker now; its outstanding calls fail with `WorkerGone`."""
        with contextlib.suppress(OSError):
            self.worker.kill()
        self.worker.wait()

    def release(self) -> None:
        """Join the threads reading a worker that has exited, close its pipes."""
        for thread in self._threads:
            thread.join(timeout=5)
        for stream in (self.worker.stdin, self.worker.stdout, self.worker.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()

    def _read_answers(self, stream: IO[str]) -> None:
        """Thread: answers to their futures, log records to this process's loggers."""
        try:
            for line in stream:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if "log" in message:
                    name, level, text = message["log"]
                    logging.getLogger(str(name)).log(int(level), scrub(str(text), self.secrets))
                    continue
                with self._lock:
                    future = self._pending.popleft() if self._pending else None
                if future is not None:
                    future.set_result(message)
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._gone = True
                pending, self._pending = list(self._pending), deque()
            for future in pending:
                future.set_exception(WorkerGone("exited"))

    def _relay_stderr(self, stream: IO[str]) -> None:
        """Thread: the worker's stderr (MLflow's own messages, warnings) to ours."""
        with contextlib.suppress(OSError, ValueError):
            for line in stream:
                line = scrub(line, self.secrets)
                self.stderr.append(line.rstrip())
                sys.stderr.write(line)
