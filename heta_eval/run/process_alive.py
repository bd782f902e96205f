"""Whether another process is still there, told apart from a later process given its pid."""

from __future__ import annotations

import contextlib
import os


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name (Linux); None elsewhere or when gone."""
    with (
        contextlib.suppress(OSError, IndexError),
        open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat,
    ):
        return stat.read().rsplit(")", 1)[1].split()
    return None


def process_gone(pid: int) -> bool:
    """Whether `pid` has exited (a zombie, not yet reaped, has exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    fields = _stat_fields(pid)
    return fields is not None and fields[0] in ("Z", "X")


def process_start_ticks(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (Linux); None when unknown. Two
    processes with one pid never share it, so it tells a reused pid apart."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20:
        return None
    with contextlib.suppress(ValueError):
        return int(fields[19])  # field 22 of stat; the list starts at field 3
    return None


def same_process_running(pid: int, start_ticks: int | None) -> bool:
    """Whether the process `pid` that started at `start_ticks` is still running."""
    if process_gone(pid):
        return False
    return start_ticks is None or process_start_ticks(pid) in (None, start_ticks)
