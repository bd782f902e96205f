"""Readers of a tracking server that does not work give up as runs do, and say what failed:
`heta-eval-runs`, `heta-eval-compare` and `load_runs` try at most 3 times (MLflow's default
is 8 tries over about four minutes), against a server answering 503 to everything and a
port nothing listens on."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .processes import cli_env, free_port

# Far above what 3 tries take, far below MLflow's default retries (a hang fails, not waits).
BOUND = 150
RUN_IDS = ("0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210")


class _Unavailable(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()


@contextmanager
def unavailable_server() -> Iterator[tuple[str, list[str]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    server.hits = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.hits  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, *argv],
            cwd=tmp_path,
            env=cli_env(),
            capture_output=True,
            text=True,
            timeout=BOUND,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{argv[:2]} still retrying a dead tracking server after {BOUND} s")


LOAD_RUNS = "import sys; from heta_eval import load_runs; load_runs(tracking_uri=sys.argv[1])"


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["runs", "compare", "load_runs"])
def test_readers_try_a_failing_server_three_times_and_say_so(tmp_path: Path, reader: str) -> None:
    with unavailable_server() as (uri, hits):
        if reader == "runs":
            done = _run(tmp_path, "-m", "heta_eval.cli.runs", "--tracking-uri", uri)
        elif reader == "compare":
            done = _run(tmp_path, "-m", "heta_eval.cli.compare", "--tracking-uri", uri, *RUN_IDS)
        else:
            done = _run(tmp_path, "-c", LOAD_RUNS, uri)
    assert len(hits) == 3, hits  # one request, retried twice
    assert f"cannot reach the MLflow tracking store at {uri}" in done.stderr
    if reader == "load_runs":
        assert done.returncode == 1 and "RunsError" in done.stderr
    else:
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


def test_a_port_nothing_listens_on_is_named(tmp_path: Path) -> None:
    uri = f"http://127.0.0.1:{free_port()}"
    done = _run(tmp_path, "-m", "heta_eval.cli.runs", "--tracking-uri", uri)
    assert done.returncode == 2, done.stderr
    assert f"heta-eval-runs: cannot reach the MLflow tracking store at {uri}" in done.stderr
