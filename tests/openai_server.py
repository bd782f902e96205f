"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests (judge, answerer)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted reply: status, body (str, bytes or JSON data), headers, delay."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any


def completion(content: str) -> dict[str, Any]:
    """A chat completion in the OpenAI response shape."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "judge-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }


def grade(prompt: str) -> str:
    """Default behaviour: CORRECT when an expected alternative occurs in the answer line."""
    lines = dict(line.split(": ", 1) for line in prompt.splitlines() if ": " in line)
    expected = lines.get("Expected", "").split(" | ")
    answer = lines.get("Answer", "")
    return "CORRECT" if any(e and e in answer for e in expected) else "INCORRECT"


@dataclass
class ChatServer:
    """State shared with the handler threads; tests script `replies` and read `requests`."""

    base_url: str = ""
    replies: list[Reply] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    decide: Callable[[str], str] = grade
    respond: Callable[[str, Any], Reply] | None = None
    """Answers unscripted requests to other APIs (embeddings, rerank): (path, body) -> Reply."""
    paths: set[str] = field(default_factory=lambda: {"/v1/chat/completions"})
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.requests)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Keep test output quiet."""

    def do_POST(self) -> None:
        state = self.server.state
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with state.lock:
            state.requests.append(
                Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            reply = state.replies.pop(0) if state.replies else None
        if reply is None and state.respond is not None:
            reply = state.respond(self.path, body)
        if reply is None:
            prompt = body["messages"][-1]["content"] if body else ""
            reply = Reply(body=completion(state.decide(prompt)))
        if reply.delay and state.stop.wait(reply.delay):
            return
        if self.path not in state.paths:
            reply = Reply(404, {"error": {"message": "not found"}})
        payload = reply.body
        if isinstance(payload, str):
            payload = payload.encode()
        elif not isinstance(payload, bytes):
            payload = json.dumps(payload).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the handler threads
    state: ChatServer

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that gave up (timeout) is expected; stay quiet."""


@contextmanager
def serve_chat(decide: Callable[[str], str] = grade) -> Iterator[ChatServer]:
    """Run the server for the duration of the block; `decide` answers unscripted prompts."""
    httpd = _Server(("127.0.0.1", 0), _Handler)
    host, port = httpd.server_address[:2]
    state = ChatServer(base_url=f"http://{host}:{port}/v1", decide=decide)
    httpd.state = state
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def first_passage(prompt: str, words: int = 12) -> str:
    """An answerer's reply: the first words of passage [1], citing it (deterministic)."""
    for line in prompt.splitlines():
        if line.startswith("[1] "):
            return " ".join(line[4:].split()[:words]) + " [1]"
    return "Insufficient information."


DECIDERS: dict[str, Callable[[str], str]] = {"grade": grade, "first_passage": first_passage}


def main() -> None:
    """Serve as a process of its own: `python -m tests.openai_server [grade|first_passage]`
    prints its base URL on the first line, then serves until stdin closes or it is stopped."""
    import sys

    with serve_chat(DECIDERS[sys.argv[1] if len(sys.argv) > 1 else "grade"]) as state:
        print(state.base_url, flush=True)
        sys.stdin.read()  # the test closes stdin (or ends this process) to stop the server


if __name__ == "__main__":
    main()
