"""Unit worker processes end when the run that started them is gone.

`runner.workers > 1` evaluates units in a forkserver pool. A run's process killed with SIGKILL
runs no cleanup, and nothing else ends its workers: each holds the forkserver's "alive" pipe
(which keeps the forkserver waiting) and both ends of its own task pipe (so it never sees
the run go), and the resource tracker waits for them all. So each worker watches the run's
process from a thread (a pidfd on Linux: woken the moment the process exits, no polling;
elsewhere a check every second) and exits when it is gone; the forkserver and the resource
tracker then see their pipes close and exit too. A run that is stopped (Ctrl-C, SIGTERM) or
fails terminates its workers (`abandon`) instead of waiting for the units they are running.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
from concurrent.futures import ProcessPoolExecutor

POLL_SECONDS = 1.0


def _gone(pid: int) -> bool:
    """Whether `pid` has exited (a zombie, not yet reaped, has exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    with (
        contextlib.suppress(OSError, IndexError),
        open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat,
    ):
        return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    return False


def _watch(run_pid: int, pidfd: int | None) -> None:
    if pidfd is not None:
        select.select([pidfd], [], [])  # readable once the process has exited
    else:
        while not _gone(run_pid):
            threading.Event().wait(POLL_SECONDS)
    os._exit(1)


def die_with_run(run_pid: int) -> None:
    """Pool initializer: exit this worker as soon as the process `run_pid` exits. Ctrl-C is
    the run's to handle (it stops the pool), not each worker's."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pidfd = None
    with contextlib.suppress(OSError, AttributeError):  # Linux >= 5.3 only
        pidfd = os.pidfd_open(run_pid)
    if _gone(run_pid):
        os._exit(1)
    threading.Thread(target=_watch, args=(run_pid, pidfd), name="run-watch", daemon=True).start()


def abandon(pool: ProcessPoolExecutor) -> None:
    """Stop `pool` without waiting for the units its workers are running."""
    # The executor keeps its worker processes in `_processes` (CPython 3.8 to 3.13).
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(OSError, AttributeError):
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
