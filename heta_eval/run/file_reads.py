"""Which files a piece of code read, and whether they are still as they were.

`watch_reads()` records, through a process audit hook (`sys.addaudithook`), every file
opened for reading and every directory listed while it is active, with each one's
signature (size, mtime, ctime, inode, device) taken as it is opened, before it is read.
`FileReads.changed()` later says whether any of them changed, appeared or disappeared.

What it cannot vouch for makes the reads unverifiable (`FileReads.unverifiable`): a network
connection or a subprocess while recording (their data are not files seen here), and a file
modified less than `RACY_SECONDS` before it was opened (a second change within the file
system's timestamp granularity could keep the same signature). Files read by native code
that bypasses Python's `open` (a C library's own I/O) are not seen.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

RACY_SECONDS = 2.0

Signature = tuple[int, int, int, int, int] | None  # None: the path did not exist

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_NETWORK_EVENTS = {"socket.connect", "socket.getaddrinfo", "urllib.Request"}
_PROCESS_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn"}
_LIST_EVENTS = {"os.listdir", "os.scandir"}


def signature(path: str) -> Signature:
    """(size, mtime_ns, ctime_ns, inode, device) of `path`, None when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


@dataclass
class FileReads:
    """The files and directories read while recording, each with its signature then."""

    signatures: dict[str, Signature] = field(default_factory=dict)
    unverifiable: str | None = None

    def _saw(self, path: object) -> None:
        if isinstance(path, int) or path is None:  # a descriptor already open: seen before
            return
        name = os.path.abspath(os.fsdecode(os.fspath(path)))  # type: ignore[arg-type]
        if name in self.signatures:
            return
        opened_at = time.time_ns()
        found = signature(name)
        self.signatures[name] = found
        # A later write sets the mtime to its own time, unequal to an mtime older than the
        # timestamps' granularity; one in the same tick as a recent mtime might not be seen.
        racy = found is not None and found[1] > opened_at - int(RACY_SECONDS * 1e9)
        if racy and self.unverifiable is None:
            self.unverifiable = f"{name} was modified less than {RACY_SECONDS:g} s before"

    def changed(self) -> str | None:
        """The first path whose signature differs from when it was read (or None)."""
        for path, before in self.signatures.items():
            if signature(path) != before:
                return path
        return None


_lock = threading.Lock()
_recording: list[FileReads] = []
_hooked = False


def _hook(event: str, args: tuple[object, ...]) -> None:
    if not _recording:  # the common case: nothing is recording
        return
    try:
        if event == "open":
            path, mode, flags = (*args, None, None, None)[:3]
            if isinstance(mode, str) and any(c in mode for c in "wax+"):
                return
            if mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS:
                return
        elif event in _LIST_EVENTS:
            path = args[0] if args else "."
            path = "." if path is None else path
        elif event in _NETWORK_EVENTS or event in _PROCESS_EVENTS:
            reason = "a network connection" if event in _NETWORK_EVENTS else "a subprocess"
            for reads in list(_recording):
                reads.unverifiable = reads.unverifiable or f"{reason} ({event})"
            return
        else:
            return
        for reads in list(_recording):
            reads._saw(path)
    except Exception:  # an audit hook must never break the operation it observes
        for reads in list(_recording):
            reads.unverifiable = reads.unverifiable or "a read that could not be recorded"


@contextlib.contextmanager
def watch_reads() -> Iterator[FileReads]:
    """Record what is read (in any thread of this process) until the block ends."""
    global _hooked
    reads = FileReads()
    with _lock:
        if not _hooked:
            sys.addaudithook(_hook)  # for the process's life; idle while nothing records
            _hooked = True
        _recording.append(reads)
    try:
        yield reads
    finally:
        with _lock:
            _recording.remove(reads)
