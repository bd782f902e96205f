"""A tracking server that accepts connections and never answers (issue 23, item 18): the run
asks it once, gives up after one request timeout (`tracking.http_timeout_seconds`) as it does
for a closed port, and keeps its tracking data in the outbox, instead of waiting out every
MLflow request's timeout and retries."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from heta_eval.tracking.outbox import Outbox

from heta_eval import EvaluationReport

from .processes import run_cli


class SilentServer:
    """A loopback socket that accepts every connection, counts it and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            self.connections.append(conn)  # held open, never read from or written to

    def close(self) -> None:
        self.sock.close()
        for conn in self.connections:
            conn.close()


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


@pytest.mark.slow
def test_a_server_that_never_answers_costs_one_timeout_then_the_outbox(
    tmp_path: Path, silent: SilentServer
) -> None:
    root = tmp_path / "outputs"
    uri = f"http://127.0.0.1:{silent.port}"
    done = run_cli(
        root,
        tmp_path,
        f"tracking.uri={uri}",
        "tracking.http_timeout_seconds=3",
        "runner.limit=5",
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # One request, not MLflow's retries of each of its requests (3 attempts of 3 s each,
    # for the experiment, the run and every batch after them).
    assert len(silent.connections) == 1
    said = done.stdout + done.stderr
    assert f"{uri} accepted the connection but sent no answer in 3 s" in said
    assert "NOT UPLOADED" in done.stdout and f"heta-eval-sync --root {root}" in done.stdout
    report = EvaluationReport.read_json(done.report_path)
    (entry,) = Outbox(root).entries()
    assert entry.pending and entry.status == "FINISHED"
    assert "no answer in 3 s" in entry.reason
    assert len(report.case_results) == 5
