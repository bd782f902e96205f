"""The tracking service (`python -m heta_eval.run.tracking_service DIR IDLE_SECONDS`): one
long-lived process per user, tracking store and code version that runs hand their MLflow
tracking to (`tracking.service=true`), so that a run's process tree neither imports MLflow
nor opens its store.

It serves the tracker worker's protocol (`run.tracker_worker`: JSON lines, one answer line
per call, log records between answers) on a Unix socket, `DIR/socket`, one session per
connection: a connection is one run, as a worker's pipes are. The calls of every connection
are made one at a time (one lock): two runs at once are both served, their calls
interleaved, never concurrently inside MLflow. A connection closing (the run ended, or was
killed) ends its session once the calls already read are done, without ending its tracking
runs, as a worker does when its input closes.

Start: the socket is bound before MLflow is imported and each connection is greeted at once
(`{"service": KEY, "pid": N}`), so a run that starts the service connects in a few tens of
milliseconds; its calls wait in the socket until MLflow is imported. `DIR/lock` is held
(flock) for the service's whole life: a socket file with no holder of the lock is stale.
`run.service_link` finds, starts and connects to it.

Hand-off: a run's last call may carry `"spool": true` (a `finish`: log the report it
carries, as the tracker logs it (`report_for_logging`), and the artifacts, report.json
among them, then end the run). The service then writes the call, with the
run's id and tracking spec, to `DIR/spool/RUN_ID.json` (0600, fsynced, renamed into place),
answers `{"value": {"spooled": PATH}}` at once, and only then logs; the run does not wait for
the logging and exits. The file is removed once the logging is done; a logging that fails
renames it `RUN_ID.failed` (the reason in the service log, the MLflow run ended FAILED). A
service that dies in between leaves the file: the next service for the directory replays it
before it serves new calls' logging (MLflow calls are one at a time), tagging the MLflow run
`heta_eval.tracking.replayed`. `HETA_EVAL_SERVICE_HOLD_SECONDS` (for tests) makes the
service wait that long between the answer and the logging.

End: after IDLE_SECONDS with no connection open, it removes its socket and exits (a run
connecting in that instant reads no greeting and starts a new service). SIGINT and SIGTERM
end it the same way between calls. Its own messages go to DIR/service.log (the directory is
private to the user); a call's failure goes only to the run that made it.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import select
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from heta_eval.config.secrets import scrub, secret_values
from heta_eval.run.tracker_worker import Session

MODULE = "heta_eval.run.tracking_service"
SOCKET = "socket"
LOCK = "lock"
LOG = "service.log"
KEY_FILE = "key"  # the service key this directory is for (written by the client)
SPOOL = "spool"  # run hand-offs acknowledged but not logged yet (see the module docstring)
HOLD_ENV = "HETA_EVAL_SERVICE_HOLD_SECONDS"
REPLAYED_TAG = "heta_eval.tracking.replayed"
SEND_TIMEOUT = 30.0  # seconds a run may leave an answer unread before it is dropped
log = logging.getLogger(MODULE)


class _SocketChannel:
    """Answers to one connection: whole lines, from any thread; a reader that does not take
    them within SEND_TIMEOUT (or is gone) makes every later message a no-op."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn: socket.socket | None = conn
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, default=str) + "\n").encode("utf-8")
        with self._lock:
            try:
                while data and self._conn is not None:
                    _, ready, _ = select.select([], [self._conn], [], SEND_TIMEOUT)
                    if not ready:
                        raise TimeoutError("the run does not read its answers")
                    data = data[self._conn.send(data) :]
            except (OSError, ValueError):
                self._conn = None


class _Scrubbed(io.TextIOBase):
    """The service's own output (its log) with the secret values of every spec it was given
    masked (a tracking URI's password in one of MLflow's warnings)."""

    def __init__(self, stream: Any, secrets: set[str]) -> None:
        self._stream = stream
        self._secrets = secrets

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._stream.write(scrub(text, self._secrets) if self._secrets else text)
        return len(text)

    def flush(self) -> None:
        self._stream.flush()


class _Route(logging.Handler):
    """Sends a log record to the connection whose call the logging thread is serving (at the
    level that connection asked for); other records go nowhere (MLflow's own output goes to
    the service log through its handlers)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.by_thread: dict[int, tuple[_SocketChannel, int]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        target = self.by_thread.get(threading.get_ident())
        if target is None or record.levelno < target[1]:
            return
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + self.format(record).split("\n", 1)[-1]
            target[0].send({"log": [record.name, record.levelno, text]})
        except Exception:
            self.handleError(record)


class Service:
    """The listening socket, the open connections and the idle clock."""

    def __init__(self, directory: Path, idle_seconds: float, key: str) -> None:
        self.directory = directory
        self.idle_seconds = idle_seconds
        self.key = key
        self.calls = threading.Lock()  # one call at a time inside MLflow
        self.ready = threading.Event()  # MLflow imported
        self.route = _Route()
        self.secrets: set[str] = set()  # of every spec received, masked in the log
        self._state = threading.Lock()
        self._open = 0
        self._last = time.monotonic()
        self._stopping = False
        self.replaying: set[str] = set()  # run ids of the spool a dead service left, not done
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    def bind(self) -> None:
        """Bind `DIR/socket` (a stale file removed first), readable by this user only."""
        path = self.directory / SOCKET
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        old = os.umask(0o177)
        try:
            self.listener.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        self.listener.listen(16)
        self._inode = path.stat().st_ino

    def accept_forever(self) -> None:
        """Thread: one thread per connection."""
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed: the service is ending
            with self._state:
                if self._stopping:
                    conn.close()
                    continue
                self._open += 1
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:
        """Thread: one connection's session, until the run closes it."""
        channel = _SocketChannel(conn)
        me = threading.get_ident()
        try:
            with self._state:
                replaying = sorted(self.replaying)
            channel.send({"service": self.key, "pid": os.getpid(), "replaying": replaying})
            self.ready.wait()

            def log_level(level: int) -> None:
                self.route.by_thread[me] = (channel, level)
                root = logging.getLogger()
                root.setLevel(min(level, root.level or logging.WARNING))

            session = Session(log_level)
            specs: dict[str, Any] = {}  # by tracker key: what a spooled hand-off needs
            with conn.makefile("r", encoding="utf-8") as lines:
                for line in lines:
                    if '"init"' in line:
                        self._remember_secrets(line, specs)
                    if '"spool"' in line and self._hand_off(line, session, specs, channel):
                        continue
                    with self.calls:
                        answer = session.answer(line)
                    channel.send(answer)
                    if session.failed:
                        break
        except (OSError, ValueError) as exc:
            log.info("a connection ended: %s", type(exc).__name__)
        finally:
            self.route.by_thread.pop(me, None)
            with contextlib.suppress(OSError):
                conn.close()
            with self._state:
                self._open -= 1
                self._last = time.monotonic()

    def _remember_secrets(self, line: str, specs: dict[str, Any]) -> None:
        with contextlib.suppress(ValueError, AttributeError):
            call = json.loads(line)
            if call.get("op") == "init":
                self.secrets |= secret_values(call.get("spec") or {})
                specs[str(call.get("tracker", ""))] = call.get("spec")

    def _hand_off(
        self, line: str, session: Session, specs: dict[str, Any], channel: _SocketChannel
    ) -> bool:
        """A spooled `finish` (module docstring): written durably, acknowledged, then
        logged. False when `line` is not one (it is then answered as any call)."""
        try:
            call = json.loads(line)
        except ValueError:
            return False
        if not (isinstance(call, dict) and call.pop("spool", False) and call.get("op") == "finish"):
            return False
        key = str(call.get("tracker", ""))
        tracker = session.trackers.get(key)
        run_id = tracker.run_id if tracker is not None else None
        if tracker is None or run_id is None or "report" not in call:
            channel.send({"error": "ValueError: nothing to hand off", "run_id": run_id})
            return True
        try:
            path = write_spool(self.directory, run_id, specs.get(key), call)
        except OSError as exc:
            channel.send({"error": f"{type(exc).__name__}: {exc}", "run_id": run_id})
            return True
        channel.send({"value": {"spooled": str(path)}, "run_id": run_id})
        hold = float(os.environ.get(HOLD_ENV) or 0)
        if hold > 0:
            time.sleep(hold)
        with self.calls:
            answer = session.answer(json.dumps(call))
        settle_spool(path, answer.get("error"))
        return True

    def start_replay(self, paths: list[Path]) -> None:
        """Log, in a thread, the hand-offs a service that died left in the spool, one at a
        time with the other calls; the service does not end before they are done."""
        with self._state:
            self.replaying |= {path.stem for path in paths}
            self._open += 1
        threading.Thread(target=self._replay, args=(paths,), name="replay", daemon=True).start()

    def _replay(self, paths: list[Path]) -> None:
        try:
            for path in paths:
                with self.calls:
                    error = replay_one(path)
                settle_spool(path, error)
                with self._state:
                    self.replaying.discard(path.stem)
        finally:
            with self._state:
                self._open -= 1
                self._last = time.monotonic()

    def wait_until_idle(self) -> None:
        """Return once no connection has been open for `idle_seconds` (then no new one is
        taken)."""
        while True:
            with self._state:
                idle = time.monotonic() - self._last
                if self._open == 0 and (idle >= self.idle_seconds or self._stopping):
                    self._stopping = True
                    return
                wait = self.idle_seconds - idle if self._open == 0 else self.idle_seconds
            time.sleep(min(max(wait, 0.05), 1.0))

    def stop(self) -> None:
        """Ask for the end once the open connections are done (a signal's handler)."""
        with self._state:
            self._stopping = True
            self._last = 0.0

    def close(self) -> None:
        """Remove the socket (if it is still this service's) and stop listening."""
        path = self.directory / SOCKET
        with contextlib.suppress(OSError):
            if path.stat().st_ino == self._inode:
                path.unlink()
        with contextlib.suppress(OSError):
            self.listener.close()


def write_spool(directory: Path, run_id: str, spec: Any, call: dict[str, Any]) -> Path:
    """`DIR/spool/RUN_ID.json`: the hand-off, on disk before the run is told it may go."""
    spool = directory / SPOOL
    with contextlib.suppress(FileExistsError):
        spool.mkdir(mode=0o700)
    entry = {"run_id": run_id, "spec": spec, "call": call, "spooled_at": time.time()}
    path = spool / f"{run_id}.json"
    tmp = spool / f".{run_id}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with open(fd, "w", encoding="utf-8") as handle:
            json.dump(entry, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    dir_fd = os.open(spool, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # the rename itself survives a crash
    finally:
        os.close(dir_fd)
    return path


def settle_spool(path: Path, error: str | None) -> None:
    """A hand-off logged: its file removed; failed: kept as `.failed`, said in the log."""
    if error is None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {path.stem}: logging failed: {error}", flush=True)
    with contextlib.suppress(OSError):
        path.replace(path.with_suffix(".failed"))


def pending_spool(directory: Path) -> list[Path]:
    """The hand-offs acknowledged but not logged in `directory` (oldest first)."""
    try:
        paths = list((directory / SPOOL).glob("*.json"))
    except OSError:
        return []
    return sorted(paths, key=lambda p: p.stat().st_mtime if p.exists() else 0.0)


def replay_one(path: Path) -> str | None:
    """Log one spooled hand-off into its MLflow run; the error, or None."""
    from heta_eval.config.components import instantiate
    from heta_eval.records import EvaluationReport
    from heta_eval.run.tracker_worker import finish_run
    from heta_eval.tracking.mlflow_tracker import MlflowTracker

    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        call, run_id = entry["call"], entry["run_id"]
        tracker = instantiate(entry["spec"])
        tracker.connect()
        if not tracker.resume(run_id):
            return f"ValueError: MLflow run {run_id} cannot be continued"
        # The report as the tracker logs it, spooled with the call (not report.json).
        report = EvaluationReport.model_validate_json(call["report"])
        if isinstance(tracker, MlflowTracker) and not tracker.offline:
            when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            tracker.client.set_tag(run_id, REPLAYED_TAG, f"logged at {when} from {path}")
        finish_run(tracker, report, call)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"{when} {path.stem}: replayed (its service ended before logging it)", flush=True)
    return None


def main(argv: list[str]) -> int:
    """Serve until idle; 3 when another service holds the directory's lock."""
    import fcntl

    directory, idle = Path(argv[0]), float(argv[1])
    key = (directory / KEY_FILE).read_text(encoding="utf-8").strip()
    lock = os.open(directory / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 3  # a live service serves this directory already
    service = Service(directory, idle, key)
    left = pending_spool(directory)  # before any new hand-off: only what a dead service left
    service.replaying = {path.stem for path in left}  # said to the runs from the start
    # Everything written to the log (ours, MLflow's handlers, warnings) passes the scrubber.
    sys.stdout = sys.stderr = _Scrubbed(sys.__stderr__, service.secrets)
    logging.basicConfig(
        level=logging.WARNING,
        format="%(asctime)s %(process)d %(name)s %(levelname)s %(message)s",
    )
    # The runs' records (at the level each asks for) go to them; the log keeps warnings.
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.WARNING)
    logging.getLogger().addHandler(service.route)
    service.bind()
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} service {os.getpid()} listening", flush=True)
    threading.Thread(target=service.accept_forever, name="accept", daemon=True).start()
    signal.signal(signal.SIGINT, lambda *_: service.stop())
    signal.signal(signal.SIGTERM, lambda *_: service.stop())
    try:
        import mlflow.tracking  # noqa: F401  (the slow part, once for every run it serves)
    except Exception as exc:
        print(f"cannot import MLflow: {type(exc).__name__}: {exc}", flush=True)
        service.close()
        return 1
    if left:
        service.start_replay(left)
    service.ready.set()
    service.wait_until_idle()
    service.close()
    when = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"{when} service {os.getpid()} exits (idle, or asked to stop)", flush=True)
    return 0


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Every connection is closed and every write committed: no teardown of MLflow.
    os._exit(status)
