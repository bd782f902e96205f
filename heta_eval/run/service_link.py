"""Finding, starting and connecting to the tracking service (`run.tracking_service`).

A service is keyed by everything that decides what it would do with a run's calls: the
resolved tracking URI, heta_eval's code version (`code_identity.code_version`: any edit of
the package gives a new key, so a service started by older code is never used), MLflow's
version, the Python interpreter, and a digest of the environment variables MLflow and its
artifact stores read (`MLFLOW_*`, cloud credentials, proxies: a run whose credentials differ
gets its own service; their values are hashed, never written). Its directory is
`BASE/KEY/` (socket, lock, log), BASE being `$HETA_EVAL_SERVICE_DIR`, else
`$XDG_RUNTIME_DIR/heta-eval`, else `/tmp/heta-eval-UID`; BASE and every KEY directory must be
this user's, mode 0700 (a directory anyone else could write to is refused, not repaired).

`connect` returns a `ServiceConnection`, which stands in for a worker's `Popen` in
`WorkerLink`: the run's `TrackerProcess` talks to the service exactly as to its own worker.
A socket file nobody answers on (a killed service) is stale: the first run to find it starts
a new service (one at a time: `BASE/KEY/start.lock`). `ServiceUnavailable` says why no
service could be reached; the run then tracks in a worker of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from heta_eval.files import flock_within
from heta_eval.run.tracking_service import KEY_FILE, LOG, MODULE, SOCKET

DIR_ENV = "HETA_EVAL_SERVICE_DIR"
START_TIMEOUT = 20.0  # seconds for a new service to listen (an interpreter start, loaded)
GREETING_TIMEOUT = 10.0  # seconds for a listening service to greet a connection
LOCK_TIMEOUT = 30.0  # seconds to wait while another run starts the service
SOCKET_PATH_MAX = 107  # bytes in sockaddr_un's sun_path, less the terminating NUL
# Environment variables that change where or how MLflow writes (hashed into the key).
ENV_PREFIXES = ("MLFLOW_", "AWS_", "AZURE_", "GOOGLE_", "DATABRICKS_")
ENV_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")
_started: list[subprocess.Popen[bytes]] = []  # the services this process started (`_start`)


class ServiceUnavailable(Exception):
    """No tracking service could be reached or started (the message says why)."""


def base_dir() -> Path:
    """The directory that holds one directory per service of this user."""
    configured = os.environ.get(DIR_ENV)
    if configured:
        return Path(configured)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "heta-eval"
    return Path(tempfile.gettempdir()) / f"heta-eval-{os.getuid()}"


def private_dir(path: Path) -> Path:
    """`path` created 0700 if missing; refused unless it is a directory (not a link) of this
    user that no one else may enter."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700, parents=False)
    try:
        info = path.lstat()
    except OSError as exc:
        raise ServiceUnavailable(f"cannot use {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ServiceUnavailable(
            f"{path} is not a private directory of this user (mode "
            f"{stat.filemode(info.st_mode)}, owner uid {info.st_uid}); remove it or set "
            f"{DIR_ENV}"
        )
    return path


def service_key(uri: str) -> str:
    """The key of the service for tracking URI `uri` with this code and environment."""
    from heta_eval.code_identity import code_version

    env = {
        name: hashlib.sha256(value.encode()).hexdigest()
        for name, value in sorted(os.environ.items())
        if name.upper().startswith(ENV_PREFIXES) or name.upper() in ENV_NAMES
    }
    material = {
        "uri": uri,
        "code": code_version(),
        "mlflow": _mlflow_version(),
        "python": sys.executable,
        "env": env,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:20]


def _mlflow_version() -> str:
    """The installed MLflow's version (an upgrade while a service runs: a new service)."""
    from importlib import metadata

    try:
        return metadata.version("mlflow")
    except metadata.PackageNotFoundError:
        return "absent"


def service_dir(uri: str) -> Path:
    """The private directory of the service for `uri` (created if missing)."""
    base = private_dir(base_dir())
    directory = private_dir(base / service_key(uri))
    if len(os.fsencode(directory / SOCKET)) > SOCKET_PATH_MAX:
        raise ServiceUnavailable(
            f"{directory / SOCKET} is longer than a Unix socket path may be; set {DIR_ENV} "
            "to a shorter directory"
        )
    return directory


def connect(uri: str, idle_seconds: float) -> ServiceConnection:
    """A connection to the service for `uri`, started (detached, ending after
    `idle_seconds` without a run) if none answers."""
    if not hasattr(socket, "AF_UNIX"):
        raise ServiceUnavailable("this platform has no Unix sockets")
    directory = service_dir(uri)
    key = directory.name
    why = "it closed every connection"
    for _ in range(3):  # a service ending as we connect: start the next one
        conn = _dial(directory) or _start(directory, idle_seconds)
        greeting = _greeting(conn)
        if greeting is None:
            conn.close()
            continue
        if greeting.get("service") != key:
            conn.close()
            why = f"the service at {directory / SOCKET} is not for this key"
            break
        connection = ServiceConnection(conn, int(greeting["pid"]), directory)
        connection.replaying = [str(r) for r in greeting.get("replaying") or []]
        return connection
    raise ServiceUnavailable(f"{why} (its log: {directory / LOG})")


def _dial(directory: Path) -> socket.socket | None:
    """A connection to the socket in `directory`; None when there is none or it is stale."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(directory / SOCKET))
    except (FileNotFoundError, ConnectionRefusedError):
        conn.close()
        return None
    except OSError as exc:
        conn.close()
        raise ServiceUnavailable(f"cannot connect to {directory / SOCKET}: {exc}") from None
    return conn


def _start(directory: Path, idle_seconds: float) -> socket.socket:
    """Start the service (unless another run just did) and connect to it."""
    start_lock = os.open(directory / "start.lock", os.O_RDWR | os.O_CREAT, 0o600)
    with open(start_lock, "a", encoding="utf-8") as lock:
        if not flock_within(lock.fileno(), LOCK_TIMEOUT, poll_seconds=0.02):
            raise ServiceUnavailable(
                f"another run has been starting the service in {directory} for {LOCK_TIMEOUT:.0f} s"
            )
        conn = _dial(directory)  # started by the run that held the lock
        if conn is not None:
            return conn
        key_fd = os.open(directory / KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(key_fd, "w", encoding="utf-8") as key_file:
            key_file.write(directory.name + "\n")
        log_fd = os.open(directory / LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            service = subprocess.Popen(
                [sys.executable, "-m", MODULE, str(directory), str(float(idle_seconds))],
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=log_fd,
                cwd=directory,
                start_new_session=True,  # neither Ctrl-C nor the run's end reach it
            )
        except OSError as exc:
            raise ServiceUnavailable(f"cannot start the tracking service: {exc}") from None
        finally:
            os.close(log_fd)
        # The service outlives the run: its Popen is kept (collected while the service runs,
        # it warns "subprocess is still running" in a library caller's process), and reaped
        # once it has ended.
        _started[:] = [p for p in _started if p.poll() is None]
        _started.append(service)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            conn = _dial(directory)
            if conn is not None:
                return conn
            status = service.poll()
            if status is not None and status != 3:  # 3: the previous one still holds the lock
                raise ServiceUnavailable(
                    f"the tracking service exited with status {status} at its start "
                    f"(its log: {directory / LOG})"
                )
            time.sleep(0.01)
        raise ServiceUnavailable(f"the tracking service did not listen within {START_TIMEOUT} s")


def _greeting(conn: socket.socket) -> dict[str, Any] | None:
    """The service's first line, or None when it closes the connection first."""
    conn.settimeout(GREETING_TIMEOUT)
    data = b""
    try:
        while not data.endswith(b"\n"):
            chunk = conn.recv(1)
            if not chunk:
                return None
            data += chunk
    except TimeoutError:
        raise ServiceUnavailable(
            f"the tracking service did not answer in {GREETING_TIMEOUT} s"
        ) from None
    except OSError:
        return None
    finally:
        conn.settimeout(None)
    try:
        greeting = json.loads(data)
    except ValueError:
        return None
    return greeting if isinstance(greeting, dict) and "pid" in greeting else None


class _Writer:
    """The run's calls to the service; closing it tells the service no more calls come."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._buffer: list[str] = []

    def write(self, text: str) -> int:
        self._buffer.append(text)
        return len(text)

    def flush(self) -> None:
        data, self._buffer = "".join(self._buffer).encode("utf-8"), []
        self._conn.sendall(data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.shutdown(socket.SHUT_WR)


class _Lines:
    """The service's answer lines; their end (the service closed the connection, or died)
    is the connection's end."""

    def __init__(self, conn: socket.socket, ended: threading.Event) -> None:
        self._conn = conn
        self._file = conn.makefile("rb")
        self._ended = ended

    def __iter__(self) -> Any:
        try:
            for line in self._file:
                yield line.decode("utf-8")
        finally:
            self._ended.set()

    def close(self) -> None:
        self._ended.set()
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(OSError):
            self._conn.close()


class ServiceConnection:
    """A connection to the tracking service in the shape of a worker's `Popen` (`stdin`,
    `stdout`, `stderr`, `pid`, `poll`, `wait`, `kill`), for `WorkerLink`: `kill` ends this
    run's connection, not the service; the service's pid is `pid` (what a rerun waits for
    while the service creates the run, `run.state.note_tracking_start`)."""

    def __init__(self, conn: socket.socket, pid: int, directory: Path) -> None:
        self.pid = pid
        self.directory = directory
        # Runs a service that ended before logging them left, which this one is logging.
        self.replaying: list[str] = []
        self.returncode: int | None = None
        self._conn = conn
        self._ended = threading.Event()
        self.stdin: _Writer | None = _Writer(conn)
        self.stdout = _Lines(conn, self._ended)
        self.stderr = io.StringIO()  # the service's own output goes to its log

    def __str__(self) -> str:
        return f"the MLflow tracking service (pid {self.pid}, {self.directory})"

    def poll(self) -> int | None:
        if self._ended.is_set():
            self.returncode = 0
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(str(self), timeout or 0.0)
        self.returncode = 0
        return 0

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.shutdown(socket.SHUT_RDWR)
        self._ended.set()
