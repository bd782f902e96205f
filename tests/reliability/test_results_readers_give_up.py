"""Readers of a tracking server that does not work give up as runs do, and say what failed:
`heta-eval-runs`, `heta-eval-compare` and `load_runs` try at most 3 times (MLflow's default
is 8 tries over about four minutes), against a server answering 503 to everything and a
port nothing listens on. The console scripts and `load_runs` are called in this process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from heta_eval import load_runs
from heta_eval.results.runs_frame import RunsError
from heta_eval.tracking.http_bounds import READER_BOUNDS

from ..cli_in_process import CliResult
from ..conftest import InProcessCli
from .processes import free_port

# Far above what 3 tries take, far below MLflow's default retries (a hang fails, not waits).
pytestmark = pytest.mark.timeout(150)
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


@pytest.fixture(autouse=True)
def reader_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bounds as a user's environment has them: unset (the readers set their defaults
    in the environment of this process; they are unset again after the test)."""
    for variable in READER_BOUNDS:
        monkeypatch.delenv(variable, raising=False)


@pytest.mark.parametrize("reader", ["runs", "compare"])
def test_commands_try_a_failing_server_three_times_and_say_so(
    cli: InProcessCli, reader: str
) -> None:
    with unavailable_server() as (uri, hits):
        done: CliResult
        if reader == "runs":
            done = cli("--tracking-uri", uri, program="heta-eval-runs")
        else:
            done = cli("--tracking-uri", uri, *RUN_IDS, program="heta-eval-compare")
    assert len(hits) == 3, hits  # one request, retried twice
    assert f"cannot reach the MLflow tracking store at {uri}" in done.stderr
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


def test_load_runs_tries_a_failing_server_three_times_and_says_so() -> None:
    with unavailable_server() as (uri, hits), pytest.raises(RunsError) as raised:
        load_runs(tracking_uri=uri)
    assert len(hits) == 3, hits
    assert f"cannot reach the MLflow tracking store at {uri}" in str(raised.value)


def test_a_port_nothing_listens_on_is_named(cli: InProcessCli) -> None:
    uri = f"http://127.0.0.1:{free_port()}"
    done = cli("--tracking-uri", uri, program="heta-eval-runs")
    assert done.returncode == 2, done.stderr
    assert f"heta-eval-runs: cannot reach the MLflow tracking store at {uri}" in done.stderr
