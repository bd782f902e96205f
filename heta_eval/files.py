"""File helpers shared across packages: a file's sha256, copies that are never half-made, and
the modes the user's umask gives (temporary files are created 0600 and renamed into place:
each is opened up to what `open()` would have created, for caches shared between users)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

TEMP_NAME_CHARS = 64
"""Characters of a file's name kept in its temporary name: with the dot, pid, thread id and
suffix added, a temporary name stays far below the 255 bytes a file name may have."""


def temp_prefix(name: str) -> str:
    """The start of a temporary name for `name` (`.{name, cut}.`), short enough for any
    legal name; the name is cut on a character, and a UTF-8 character takes at most 4 bytes."""
    return f".{name[:TEMP_NAME_CHARS]}."


def current_umask() -> int:
    """This process's umask, read without changing it (Linux: /proc/self/status)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    # Elsewhere: set and restore it (a file created by another thread in between would get
    # the stricter mask, never a looser one).
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode a new file gets under the umask (0644 under 022)."""
    return 0o666 & ~current_umask()


def directory_mode() -> int:
    """The mode a new directory gets under the umask (0755 under 022)."""
    return 0o777 & ~current_umask()


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def copy_atomically(source: Path, target: Path) -> Path:
    """Copy `source` to `target` through a temporary name in the same directory, then rename:
    a crash leaves the old `target` or the new one, never part of it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=temp_prefix(target.name), suffix=".tmp")
    os.close(fd)
    try:
        os.chmod(tmp, file_mode())
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def write_atomically(target: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `target` through a temporary name in the same directory,
    flushed to disk, then renamed: a crash leaves the old `target` or the new one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=temp_prefix(target.name), suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(fd, file_mode())
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def flock_within(fd: int, timeout: float, poll_seconds: float = 0.05) -> bool:
    """Take an exclusive `flock` on `fd`, trying every `poll_seconds` for at most `timeout`
    seconds; False if another process still holds it then (a blocking `flock` cannot time out)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_seconds)
