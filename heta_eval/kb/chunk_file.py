"""A knowledge base's chunks kept in a JSON-lines file and read back by position.

A build appends its chunks to a `ChunkFileWriter` as they are made (one `Chunk` JSON object
per line, the format of the build cache's `chunks.jsonl`), so no list of every chunk is held
in memory; only the byte offset where each line ends is (8 bytes per chunk). The finished
`ChunkFile` is a read-only sequence of chunks: `chunks[i]` reads one line with `os.pread`,
iterating reads the file in order. A build's file is an unnamed temporary file (in
`tempfile.gettempdir()`, i.e. `$TMPDIR`) that disappears when the last reader closes it; a
knowledge base loaded from the build cache reads the cache entry's `chunks.jsonl` itself.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, overload

from heta_eval.kb.documents import Chunk

if TYPE_CHECKING:
    import numpy as np

_SCAN_BLOCK = 1 << 24
"""Bytes read at a time when finding the line ends of an existing file."""


class ChunkFileWriter:
    """Appends chunks to an unnamed temporary file; `finish()` turns it into a ChunkFile."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self._directory = str(directory or tempfile.gettempdir())
        try:
            self._handle: IO[bytes] = tempfile.TemporaryFile(  # noqa: SIM115 (open while read)
                dir=self._directory, prefix="chunks-"
            )
        except OSError as exc:
            raise self._error(exc) from exc
        self._ends = array("q")
        self._size = 0

    def __len__(self) -> int:
        return len(self._ends)

    def add(self, chunks: Iterable[Chunk]) -> None:
        """Append `chunks` (in order: their positions follow those already written)."""
        lines = [chunk.model_dump_json().encode("utf-8") + b"\n" for chunk in chunks]
        for line in lines:
            self._size += len(line)
            self._ends.append(self._size)
        try:
            self._handle.write(b"".join(lines))
        except OSError as exc:
            raise self._error(exc) from exc

    def _error(self, exc: OSError) -> OSError:
        """`exc` naming the directory of the build's chunk file (the file itself has no name)."""
        where = f"{self._directory} (the build's temporary chunk file; TMPDIR sets where)"
        return OSError(exc.errno, exc.strerror, where)

    def finish(self) -> ChunkFile:
        """The chunks written so far, readable by position."""
        import numpy as np

        try:
            self._handle.flush()
        except OSError as exc:
            raise self._error(exc) from exc
        ends = np.frombuffer(self._ends, dtype=np.int64)
        return ChunkFile(self._handle, ends)

    def discard(self) -> None:
        """Close (and so delete) the file without reading it."""
        self._handle.close()


class ChunkFile(Sequence[Chunk]):
    """A read-only sequence of chunks stored one JSON line each in an open file.

    Open an existing `chunks.jsonl` with `ChunkFile.open(path)`; a build makes one with
    `ChunkFileWriter`. `text(i)` and `texts()` read only the texts.
    """

    def __init__(self, handle: IO[bytes], ends: np.ndarray) -> None:
        self._handle = handle
        self._fd = handle.fileno()
        self._ends = ends
        # Closed (a build's temporary file deleted) when the last reference goes.
        self._closer = weakref.finalize(self, handle.close)

    @classmethod
    def open(cls, path: Path) -> ChunkFile:
        """The chunks of the JSON-lines file at `path` (one chunk per non-empty line)."""
        import numpy as np

        handle = path.open("rb")
        ends: list[np.ndarray] = []
        offset = 0
        while block := handle.read(_SCAN_BLOCK):
            ends.append(np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10) + offset + 1)
            offset += len(block)
        handle.seek(0)
        positions = np.concatenate(ends) if ends else np.zeros(0, dtype=np.int64)
        if offset and (not len(positions) or positions[-1] != offset):
            positions = np.append(positions, offset)  # a last line without its newline
        starts = np.concatenate([[0], positions[:-1]])
        # Empty lines are not chunks (when there is one, every line is checked for only
        # whitespace too, as a hand-edited file might have).
        keep = positions - starts > 1
        if not keep.all():
            lines = [_read(handle.fileno(), s, e) for s, e in zip(starts, positions, strict=True)]
            keep = np.array([bool(line.strip()) for line in lines], dtype=bool)
        chunk_file = cls(handle, positions.astype(np.int64))
        if not keep.all():
            chunk_file._starts = starts[keep].astype(np.int64)
            chunk_file._ends = positions[keep].astype(np.int64)
        return chunk_file

    _starts: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._ends)

    def _span(self, position: int) -> tuple[int, int]:
        if self._starts is not None:
            return int(self._starts[position]), int(self._ends[position])
        start = int(self._ends[position - 1]) if position > 0 else 0
        return start, int(self._ends[position])

    def line(self, position: int) -> bytes:
        """The JSON line of the chunk at `position` (negative positions count from the end)."""
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError(f"chunk position {position} out of range (0-{len(self) - 1})")
        return _read(self._fd, *self._span(position))

    @overload
    def __getitem__(self, position: int) -> Chunk: ...
    @overload
    def __getitem__(self, position: slice) -> list[Chunk]: ...
    def __getitem__(self, position: int | slice) -> Chunk | list[Chunk]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        return Chunk.model_validate_json(self.line(position))

    def __iter__(self) -> Iterator[Chunk]:
        for batch in self.batches():
            yield from batch

    def batches(self, size: int = 4096) -> Iterator[list[Chunk]]:
        """Every chunk in order, `size` at a time (read sequentially)."""
        for start in range(0, len(self), size):
            stop = min(start + size, len(self))
            first, _ = self._span(start)
            _, last = self._span(stop - 1)
            block = _read(self._fd, first, last)
            lines = [line for line in block.split(b"\n") if line.strip()]
            yield [Chunk.model_validate_json(line) for line in lines]

    def text(self, position: int) -> str:
        """The text of the chunk at `position`."""
        return self[position].text

    def texts(self) -> Iterator[str]:
        """Every chunk's text, in order."""
        for batch in self.batches():
            for chunk in batch:
                yield chunk.text

    def copy_to(self, path: Path) -> None:
        """Write the chunks, one JSON line each, to `path` (the build cache's chunks.jsonl)."""
        with path.open("wb") as out:
            if self._starts is None:
                with os.fdopen(os.dup(self._fd), "rb") as source:
                    source.seek(0)
                    remaining = int(self._ends[-1]) if len(self) else 0
                    while remaining > 0:
                        block = source.read(min(remaining, _SCAN_BLOCK))
                        if not block:
                            break
                        out.write(block)
                        remaining -= len(block)
                return
            for position in range(len(self)):
                out.write(self.line(position).rstrip(b"\n") + b"\n")

    def close(self) -> None:
        """Release the file (a build's temporary file is deleted)."""
        self._closer()


def _read(fd: int, start: int, end: int) -> bytes:
    """Bytes [start, end) of the file open as `fd`."""
    data = os.pread(fd, end - start, start)
    while len(data) < end - start:  # pread may return less than asked
        more = os.pread(fd, end - start - len(data), start + len(data))
        if not more:
            raise OSError(f"chunk file ended at byte {start + len(data)}, expected {end}")
        data += more
    return data
