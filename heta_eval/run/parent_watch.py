"""Unit worker processes end when the run that started them is gone.

`runner.workers > 1` evaluates units in a forkserver pool. A run's process killed with SIGKILL
runs no cleanup: its workers (each with a benchmark's documents and indexes in memory) would
stay blocked on their task pipe, which they hold both ends of, and the resource tracker with
them. The forkserver itself exits when the run's process does (its "alive" pipe closes), so
each worker, the forkserver's child, asks Linux for SIGKILL when its parent exits
(`PR_SET_PDEATHSIG`) and, where that is not available, watches its parent from a thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
WATCH_SECONDS = 1.0


def _parent_death_signal() -> bool:
    """Ask the kernel to SIGKILL this process when its parent exits (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    return False


def _watch(parent: int) -> None:
    while True:
        time.sleep(WATCH_SECONDS)
        if os.getppid() != parent:  # reparented: the parent has exited
            os._exit(1)


def die_with_parent() -> None:
    """Pool initializer: end this worker when its parent process exits."""
    parent = os.getppid()
    armed = _parent_death_signal()
    if os.getppid() != parent or parent == 1:  # the parent died before the signal was armed
        os._exit(1)
    if not armed:
        threading.Thread(target=_watch, args=(parent,), name="parent-watch", daemon=True).start()
