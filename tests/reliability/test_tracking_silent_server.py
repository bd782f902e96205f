"""A tracking server that accepts connections and never answers (issue 23, item 18): the run
asks it once, gives up after one request timeout (`tracking.http_timeout_seconds`) as it does
for a closed port, and marks its run directory unsynced (`tracking.json`), instead of waiting
out every MLflow request's timeout and retries. `heta-eval` runs in this process."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from heta_eval import EvaluationReport

from ..conftest import InProcessCli
from ..tracking_readback import record_of
from .conftest import report_path


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


def test_a_server_that_never_answers_costs_one_timeout_then_the_run_is_unsynced(
    cli: InProcessCli, tmp_path: Path, silent: SilentServer
) -> None:
    root = tmp_path / "outputs"
    uri = f"http://127.0.0.1:{silent.port}"
    started = time.monotonic()
    done = cli(f"tracking.uri={uri}", "tracking.http_timeout_seconds=3", "runner.limit=5")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    # One request, not MLflow's retries of each of its requests (3 attempts of 3 s each,
    # for the experiment, the run and every batch after them).
    assert len(silent.connections) == 1
    said = done.stdout + done.stderr
    assert f"{uri} accepted the connection but sent no answer in 3 s" in said
    assert "NOT IN MLFLOW" in done.stdout and f"heta-eval-sync --root {root}" in done.stdout
    assert took < 60  # one 3 s timeout, not MLflow's retries of each request
    run_dir = report_path(done.stdout).parent
    report = EvaluationReport.read_json(run_dir / "report.json")
    record = record_of(run_dir)
    assert not record.synced and record.status == "FINISHED" and record.run_id is None
    assert "no answer in 3 s" in record.reason
    assert len(report.case_results) == 5
