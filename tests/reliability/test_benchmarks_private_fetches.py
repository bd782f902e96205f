"""A document's `source_uri` never reaches this machine or its network unless allowed (issue
23, item 11): a host name that resolves to a loopback address, and a redirect (302) to one,
are refused when the document is fetched; a host the benchmark allows is fetched.

Loopback servers only: this machine's host name must resolve to a loopback address (it does
in containers and on most machines: /etc/hosts), otherwise the host-name cases are skipped.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ..conftest import InProcessCli
from .conftest import jsonl_args, report_path, write_jsonl

SECRET = b"internal service: not for the benchmark"


def _loopback_host_name() -> str:
    name = socket.gethostname()
    try:
        addresses = {i[4][0] for i in socket.getaddrinfo(name, 80, proto=socket.IPPROTO_TCP)}
    except socket.gaierror:
        addresses = set()
    if not addresses or not all(a.startswith("127.") for a in addresses):
        pytest.skip(f"this machine's host name {name!r} does not resolve to loopback only")
    return name


@contextlib.contextmanager
def _service(redirect_to: str) -> Iterator[tuple[int, list[str]]]:
    """A local service on 127.0.0.1: /secret (must never be read), /ok, and /hop (302 to
    `redirect_to`, formatted with the port)."""
    requested: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            requested.append(self.path)
            if self.path == "/hop":
                self.send_response(302)
                self.send_header("Location", redirect_to.format(port=server.server_port))
                self.end_headers()
                return
            body = SECRET if self.path == "/secret" else b"The kelp forest document."
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port, requested
    finally:
        server.shutdown()
        server.server_close()


def test_a_host_name_of_this_machine_and_a_redirect_to_loopback_are_not_fetched(
    cli: InProcessCli, tmp_path: Path
) -> None:
    host = _loopback_host_name()
    root = tmp_path / "outputs"
    with _service("http://localhost:{port}/secret") as (port, requested):
        docs = write_jsonl(
            tmp_path / "docs.jsonl",
            [
                {"document_id": "ok", "source_uri": f"http://127.0.0.1:{port}/ok"},
                {"document_id": "named", "source_uri": f"http://{host}:{port}/secret"},
                {"document_id": "hop", "source_uri": f"http://127.0.0.1:{port}/hop"},
            ],
        )
        cases = write_jsonl(
            tmp_path / "cases.jsonl",
            [
                {
                    "case_id": f"q-{d}",
                    "query": "kelp",
                    "evidence": [{"locator": {"document_id": d}}],
                }
                for d in ("ok", "named", "hop")
            ],
        )
        done = cli(
            *jsonl_args(docs, cases, "benchmark.allow_private_urls=[127.0.0.1]"),
            "runner.max_failure_rate=1",
        )
    assert "/secret" not in requested, requested
    assert requested.count("/ok") == 1 and "/hop" in requested
    assert SECRET.decode() not in done.stdout + done.stderr
    assert not [p for p in root.rglob("*") if p.is_file() and SECRET in p.read_bytes()]
    report = json.loads(report_path(done.stdout).read_text())
    errors = {
        r["case_id"]: (r.get("error") or {}).get("message", "") for r in report["case_results"]
    }
    assert errors["q-ok"] == ""
    for case, shown in (("q-named", f"host {host!r}"), ("q-hop", "host 'localhost'")):
        assert shown in errors[case] and "benchmark.allow_private_urls" in errors[case]


def test_the_fetch_resolves_the_host_and_refuses_it_without_a_request() -> None:
    from heta_eval.benchmarks.url_guard import UnsafeUrlError, fetch

    host = _loopback_host_name()
    with _service("http://127.0.0.1:{port}/secret") as (port, requested):
        with pytest.raises(UnsafeUrlError, match="resolves to a loopback, private"):
            fetch(f"http://{host}:{port}/secret", False)
        with pytest.raises(UnsafeUrlError, match=r"host '127\.0\.0\.1'"):
            fetch(f"http://127.0.0.1:{port}/hop", frozenset({"localhost"}))
        assert fetch(f"http://{host}:{port}/ok", frozenset({host})).startswith(b"The kelp")
    assert "/secret" not in requested
