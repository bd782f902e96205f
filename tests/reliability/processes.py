"""Real processes for reliability tests: `heta-eval` subprocesses and an MLflow server."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..conftest import REPO, user_env
from ..team_servers import seed_sqlite_store


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: no MLFLOW_* of ours, tests/ importable."""
    env = user_env()
    env["PYTHONPATH"] = str(REPO)
    env["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    env.update(extra)
    return env


def start_cli(root: Path, cwd: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    """`python -m heta_eval paths.root=ROOT ARGS` in the background (flags first)."""
    flags = [a for a in args if a.startswith("-")]
    overrides = [a for a in args if not a.startswith("-")]
    return subprocess.Popen(
        [sys.executable, "-m", "heta_eval", *flags, f"paths.root={root}", *overrides],
        cwd=cwd,
        env=cli_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_cli(root: Path, cwd: Path, *args: str, timeout: float = 300, **env: str) -> Finished:
    """Run the CLI to the end."""
    proc = start_cli(root, cwd, *args, **env)
    out, err = proc.communicate(timeout=timeout)
    return Finished(proc.returncode, out, err)


# Runs `python -m heta_eval ARGS` with every file it writes limited to LIMIT bytes.
LIMITED = (
    "import resource, runpy, signal, sys\n"
    "limit = int(sys.argv.pop(1))\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
    "sys.argv[0] = 'heta_eval'\n"
    "runpy.run_module('heta_eval', run_name='__main__', alter_sys=True)\n"
)


def run_limited(root: Path, cwd: Path, limit: int, *args: str, timeout: float = 300) -> Finished:
    """Run the CLI to the end on a full disk: a file size limit of `limit` bytes
    (RLIMIT_FSIZE, with SIGXFSZ ignored so that writes fail with EFBIG) set in the child."""
    done = subprocess.run(
        [sys.executable, "-c", LIMITED, str(limit), f"paths.root={root}", *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Finished(done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class Finished:
    """A finished subprocess."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def report_path(self) -> Path:
        """The report the CLI printed (`report: PATH`)."""
        line = next(x for x in self.stdout.splitlines() if x.startswith("report: "))
        return Path(line.removeprefix("report: "))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class MlflowServer:
    """`mlflow server` on 127.0.0.1 with a SQLite store and served artifacts under `home`."""

    home: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180) -> None:
        """Start and wait until /health answers."""
        self.home.mkdir(parents=True, exist_ok=True)
        seed_sqlite_store(f"sqlite:///{self.home / 'mlflow.db'}")
        log = (self.home / "server.log").open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mlflow",
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                "1",
                "--backend-store-uri",
                f"sqlite:///{self.home / 'mlflow.db'}",
                "--artifacts-destination",
                str(self.home / "artifacts"),
            ],
            cwd=self.home,
            # The job runner (MLflow's GenAI jobs, which heta-eval does not use) is off.
            env=cli_env(MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false"),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the server and its workers
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError((self.home / "server.log").read_text()[-3000:])
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.uri}/health", timeout=2) as reply,
            ):
                if reply.status == 200:
                    return
            time.sleep(0.25)
        self.kill()
        raise RuntimeError(f"mlflow server did not start: {(self.home / 'server.log').read_text()}")

    def kill(self) -> None:
        """SIGKILL the server's process group (no goodbye to its clients) and wait."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None


@contextlib.contextmanager
def mlflow_server(home: Path, port: int | None = None) -> Iterator[MlflowServer]:
    """A running MLflow server, killed at the end."""
    server = MlflowServer(home, port or free_port())
    server.start()
    try:
        yield server
    finally:
        server.kill()


def verify_cache(cache_dir: Path) -> tuple[int, int]:
    """Check every build cache entry against its checksums and every cached response parses;
    (entries, responses). Temporary (dot) files and directories are not entries."""
    import hashlib
    import json

    entries = 0
    for entry in sorted((cache_dir / "kb").glob("*/*")):
        if entry.name.startswith("."):
            continue
        listed = json.loads((entry / "checksums.json").read_text())
        assert listed, entry
        for relative, expected in listed.items():
            digest = hashlib.sha256((entry / relative).read_bytes()).hexdigest()
            assert digest == expected, f"{entry / relative} does not match its checksum"
        entries += 1
    responses = 0
    for path in sorted((cache_dir / "responses").glob("*.json")):
        assert "response" in json.loads(path.read_text()), path
        responses += 1
    return entries, responses


def descendants(pid: int) -> dict[int, bytes]:
    """Every live descendant of `pid` and its command line, from each thread's `children`
    file in /proc (cheap enough to read many times a second)."""
    found: dict[int, bytes] = {}
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                pids = [int(p) for p in children.read_text().split()]
            except OSError:
                continue
            for child in pids:
                if child in found:
                    continue
                try:
                    argv = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
                except OSError:
                    continue
                found[child] = argv[:200]
                frontier.append(child)
    return found


def kill_left_over(pids: Iterable[int]) -> list[int]:
    """SIGKILL those of `pids` (processes a test started) that are still there; them."""
    left = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            left.append(pid)
    return left
