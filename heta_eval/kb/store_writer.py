"""Writing objects into a LocalObjectStore from a child process, beside the work that follows.

A benchmark's raw documents are thousands of small files, one directory each; creating
them costs file-system metadata time that depends on the disk, not on the CPU. The runner
hands the bytes it already holds to `BackgroundStoreWriter`, builds the knowledge bases
from the same bytes in memory meanwhile, and calls `finish()` before it writes the report.

The child runs `python -m heta_eval.kb.store_writer ROOT`: it reads frames (a header with
the key's and the data's lengths, the key, the data) from its standard input, puts each
with `LocalObjectStore.put` (atomic, identical bytes left untouched), stops writing at the
first failure, and prints one JSON line: how many objects it wrote, the seconds it spent
writing them, and the failure.
"""

from __future__ import annotations

import json
import os
import queue
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from heta_eval.kb.store import InvalidKeyError, LocalObjectStore, check_key

_HEADER = struct.Struct("<IQ")  # key length, data length
_BATCH_BYTES = 4 << 20  # bytes handed to one write call (the GIL is released during it)
_PIPE_BYTES = 1 << 20


class StoreWriteError(OSError):
    """The writer process could not put an object (or died): which key, which file, why."""


class BackgroundStoreWriter:
    """Puts objects into the LocalObjectStore at `root` from a separate process.

    `put` validates the key and queues the bytes (it never waits for the disk); `finish`
    sends them, waits for the process and raises the first failure as an OSError that names
    the file, with the original errno and reason (a full disk reads as one). `close` ends the
    process without waiting when the run is abandoned.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._frames: list[bytes] = []
        self._size = 0
        self._process = subprocess.Popen(
            [sys.executable, "-m", "heta_eval.kb.store_writer", str(self.root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        _widen_pipe(self._process.stdin)
        # Batches of frames, joined by the feeder just before it writes them: until then a
        # batch refers to the caller's bytes rather than holding a copy (a writer that lags
        # behind the build would otherwise hold a second copy of every document queued).
        self._batches: queue.SimpleQueue[list[bytes]] = queue.SimpleQueue()
        self._failure: BaseException | None = None
        self._feeder = threading.Thread(target=self._feed, name="store-writer-feed", daemon=True)
        self._feeder.start()

    def put(self, key: str, data: bytes) -> None:
        """Queue `data` under `key`; an invalid key raises InvalidKeyError here."""
        check_key(key)
        encoded = key.encode("utf-8")
        self._frames += (_HEADER.pack(len(encoded), len(data)), encoded, data)
        self._size += len(data) + len(encoded)
        if self._size >= _BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Hand what is queued to the writer process now (`put` does it every few MB)."""
        if self._frames:
            self._batches.put(self._frames)
            self._frames, self._size = [], 0

    def _feed(self) -> None:
        """Thread: hand the queued batches to the child until an empty batch ends them."""
        stdin = self._process.stdin
        assert stdin is not None
        try:
            while batch := self._batches.get():
                stdin.write(b"".join(batch))
                del batch
            stdin.close()
        except (OSError, ValueError) as exc:
            self._failure = exc  # the child is gone; finish() says why from its stderr

    def finish(self) -> tuple[int, float]:
        """Wait until every queued object is written; return how many were, and the
        seconds the writer process spent writing them (beside the caller's work).

        Raises StoreWriteError with the errno, the reason and the file of the first object
        that could not be put.
        """
        self.flush()
        self._batches.put([])
        self._feeder.join()
        assert self._process.stdout is not None and self._process.stderr is not None
        stdout = self._process.stdout.read()  # the child says little: no pipe fills up
        stderr = self._process.stderr.read()
        self._process.wait()
        lines = stdout.decode("utf-8", "replace").strip().splitlines()
        try:
            status = json.loads(lines[-1])
        except (IndexError, ValueError):
            tail = stderr.decode("utf-8", "replace").strip()[-2000:]
            raise StoreWriteError(
                f"the object store writer for {self.root} ended with exit code "
                f"{self._process.returncode} before reporting: {tail or self._failure}"
            ) from None
        error = status.get("error")
        if error:
            if error["type"] == "InvalidKeyError":
                raise InvalidKeyError(error["message"])
            raise StoreWriteError(error.get("errno") or 0, error["message"], error.get("path"))
        return int(status["written"]), float(status["seconds"])

    def close(self) -> None:
        """End the writer without waiting for the queued objects (an abandoned run)."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._batches.put([])
        self._feeder.join(timeout=5)
        for stream in (self._process.stdout, self._process.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> BackgroundStoreWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _widen_pipe(stream: object) -> None:
    """Give the pipe to the child a 1 MB buffer where Linux allows it (fewer wake-ups)."""
    try:
        import fcntl

        fcntl.fcntl(stream.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE_BYTES)  # type: ignore[attr-defined]
    except (ImportError, OSError, AttributeError):
        pass


def _read_exactly(stream, size: int) -> bytes:  # type: ignore[no-untyped-def]
    data = stream.read(size)
    if len(data) != size:
        raise EOFError(f"expected {size} bytes, got {len(data)}")
    return data


def serve(root: str, stdin, stdout) -> int:  # type: ignore[no-untyped-def]
    """The child's loop: put every framed object into the store at `root`; report once."""
    store = LocalObjectStore(root)
    written = 0
    busy = 0.0  # seconds spent putting, not waiting for the parent
    error: dict[str, object] | None = None
    while True:
        header = stdin.read(_HEADER.size)
        if not header:
            break
        try:
            key_size, data_size = _HEADER.unpack(header)
            key = _read_exactly(stdin, key_size).decode("utf-8")
            data = _read_exactly(stdin, data_size)
        except (struct.error, EOFError, UnicodeDecodeError) as exc:
            error = error or {"type": "ProtocolError", "key": "?", "message": str(exc)}
            break
        if error is not None:
            continue  # keep reading so the parent never blocks on a full pipe
        started = time.perf_counter()
        try:
            store.put(key, data)
            written += 1
        except (OSError, InvalidKeyError) as exc:
            error = {
                "type": type(exc).__name__,
                "key": key,
                "errno": getattr(exc, "errno", None),
                "message": getattr(exc, "strerror", None) or str(exc),
                "path": str(_path_or_key(store, key)),
            }
        busy += time.perf_counter() - started
    stdout.write(json.dumps({"written": written, "seconds": busy, "error": error}) + "\n")
    stdout.flush()
    return 0


def _path_or_key(store: LocalObjectStore, key: str) -> object:
    try:
        return store.path_of(key)
    except (OSError, InvalidKeyError):
        return key


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1], sys.stdin.buffer, sys.stdout))
