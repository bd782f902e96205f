"""Real servers for the team-tracking tests: PostgreSQL (Debian's binaries, started by an
unprivileged user in a temporary directory) and `mlflow server` on it, both on loopback."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def seed_sqlite_store(backend_uri: str) -> None:
    """Give a new SQLite store of an `mlflow server` the migrated empty schema from the
    store template (heta_eval/tracking/store_template.py; tests/unit/tracking/test_store_template.py
    shows a copy is the store MLflow makes itself), so the server starts without running
    every migration first (several seconds of its start on this machine). Other stores,
    and a store that exists already, are left to MLflow."""
    from heta_eval.tracking.store_template import create_from_template

    prefix = "sqlite:///"
    if backend_uri.startswith(prefix):
        database = Path(backend_uri.removeprefix(prefix))
        if not database.exists():
            database.parent.mkdir(parents=True, exist_ok=True)
            create_from_template(database)


def _pg_bin() -> Path:
    """Debian's PostgreSQL binaries (/usr/lib/postgresql/<major>/bin, the newest), or
    $HETA_EVAL_PG_BIN."""
    if os.environ.get("HETA_EVAL_PG_BIN"):
        return Path(os.environ["HETA_EVAL_PG_BIN"])
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return found[-1].parent if found else Path("/usr/lib/postgresql/15/bin")


PG_BIN = _pg_bin()
JOB_EXECUTION = "MLFLOW_SERVER_ENABLE_JOB_EXECUTION"
# PostgreSQL refuses to run as root: as root, the server runs as this user.
PG_USER = "nobody"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def postgres_missing() -> str | None:
    """Why PostgreSQL cannot be started here (None: it can)."""
    if not (PG_BIN / "initdb").is_file():
        return f"PostgreSQL's initdb not found in {PG_BIN} (apt-get install postgresql)"
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        return "psycopg2 is not installed (pip install 'heta-eval[postgres]')"
    return None


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["setpriv", f"--reuid={PG_USER}", f"--regid={_gid()}", "--clear-groups", *command]


def _gid() -> int:
    return pwd.getpwnam(PG_USER).pw_gid


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A fresh PostgreSQL cluster on a loopback port; yields its SQLAlchemy URI (database
    `postgres`, user `postgres`, trust authentication on loopback only). Stopped at exit."""
    home = Path(tempfile.mkdtemp(prefix="heta-eval-pg-"))
    if os.geteuid() == 0:
        pw = pwd.getpwnam(PG_USER)
        os.chown(home, pw.pw_uid, pw.pw_gid)
    data, port = home / "data", free_port()
    env = {**os.environ, "LC_ALL": "C"}
    subprocess.run(
        _as_server_user(
            [
                *(str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"),
                *("-E", "UTF8", "--no-sync"),
            ]
        ),
        check=True,
        capture_output=True,
        env=env,
    )
    options = (
        f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    )
    subprocess.run(
        _as_server_user(
            [
                *(str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(home / "server.log")),
                *("-w", "-o", options, "start"),
            ]
        ),
        check=True,
        capture_output=True,
        env=env,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_server_user([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            capture_output=True,
            env=env,
        )
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def mlflow_server(
    backend_uri: str,
    artifacts: Path,
    env: dict[str, str],
    extra_args: tuple[str, ...] = (),
    workers: int = 2,
) -> Iterator[str]:
    """`mlflow server` on `backend_uri` with artifacts under `artifacts` (and `extra_args`,
    e.g. `--app-name basic-auth`); yields its URL.

    The server's job runner (worker processes for MLflow's GenAI jobs, which heta-eval does
    not use) is off unless `env` turns it on: it costs seconds of CPU at start and holds the
    server up for seconds when it is stopped."""
    env = {JOB_EXECUTION: "false", **env}
    seed_sqlite_store(backend_uri)
    port = free_port()
    log = artifacts.parent / "mlflow-server.log"
    command = [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        backend_uri,
        "--artifacts-destination",
        str(artifacts),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        *extra_args,
    ]
    with log.open("w") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mlflow server did not start:\n{log.read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
