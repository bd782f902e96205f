"""A small local HTTP file server for download tests: Range support, request log, faults."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


@dataclass
class RecordedRequest:
    """One request the server received: its path and Range header (None when absent)."""

    path: str
    range: str | None


@dataclass
class FileServer:
    """State shared by the handler threads; tests change the switches between requests.

    - `files`: URL path -> body.
    - `ignore_range`: answer 200 with the whole body even when a Range was requested.
    - `cut_after`: send the full Content-Length header, then only this many body bytes,
      then close the connection (an interrupted download). Applies to every request.
    - `stall`: wait until this event is set before answering (a client timeout).
    """

    base_url: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    ignore_range: bool = False
    cut_after: int | None = None
    stall: threading.Event | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        """The absolute URL of `path` (which starts with '/')."""
        return self.base_url + path

    @property
    def range_headers(self) -> list[str | None]:
        """The Range header of every request so far, in order."""
        with self.lock:
            return [r.range for r in self.requests]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Keep test output quiet."""

    def do_GET(self) -> None:
        state = self.server.state
        range_header = self.headers.get("Range")
        with state.lock:
            state.requests.append(RecordedRequest(self.path, range_header))
            body = state.files.get(self.path)
            ignore_range = state.ignore_range
            cut_after = state.cut_after
            stall = state.stall
        if stall is not None:
            stall.wait(timeout=5)
        if body is None:
            self.send_error(404, "no such file")
            return
        start, status = 0, 200
        match = _RANGE.match(range_header or "")
        if match and not ignore_range:
            start = int(match.group(1))
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        payload = body[start:]
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.end_headers()
        if cut_after is not None:
            payload = payload[:cut_after]
        self.wfile.write(payload)
        self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the handler threads
    state: FileServer

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that gave up (timeout, cut connection) is expected; stay quiet."""


@contextmanager
def serve_files(files: dict[str, bytes] | None = None) -> Iterator[FileServer]:
    """Serve `files` on 127.0.0.1 (a free port) for the duration of the block."""
    server = _Server(("127.0.0.1", 0), _Handler)
    host, port = server.server_address[:2]
    state = FileServer(base_url=f"http://{host}:{port}", files=dict(files or {}))
    server.state = state
    thread = threading.Thread(
        target=server.serve_forever, args=(0.01,), daemon=True, name="test-http"
    )
    thread.start()
    try:
        yield state
    finally:
        if state.stall is not None:
            state.stall.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
