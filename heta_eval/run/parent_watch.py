"""Unit worker processes end when the run that started them is gone.

`runner.workers > 1` evaluates units in a forkserver pool. A run's process killed with SIGKILL
runs no cleanup, and nothing else ends its workers: each holds the forkserver's "alive" pipe
(which keeps the forkserver waiting) and both ends of its own task pipe (so it never sees
the run go), and the resource tracker waits for them all. So each worker watches the run's
process from a thread (a pidfd on Linux: woken the moment the process exits, no polling;
elsewhere a check every second) and exits when it is gone; the forkserver and the resource
tracker then see their pipes close and exit too. A run that is stopped (Ctrl-C, SIGTERM) or
fails terminates its workers (`abandon`) instead of waiting for the units they are running.

A worker ends once, cleanly: SIGTERM to the run's process group reaches each worker twice (the
signal itself, then `abandon`'s), and the watch thread may end it too. The second ending must
not cut short the first's cleanup (a semaphore unlinked but not yet unregistered is reported
by the resource tracker as leaked), nor may a SIGTERM end a worker while it is between
creating a semaphore and registering its cleanup.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from types import FrameType

POLL_SECONDS = 1.0
TERMINATE_SECONDS = 5.0
RETRY_SECONDS = 0.02  # a SIGTERM deferred out of semaphore bookkeeping comes again after


def process_gone(pid: int) -> bool:
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
        while not process_gone(run_pid):
            threading.Event().wait(POLL_SECONDS)
    main = threading.main_thread().ident
    while _in_bookkeeping(sys._current_frames().get(main)):
        threading.Event().wait(RETRY_SECONDS)
    _exit_cleanly(1)


_ending = threading.Lock()  # held by whichever of the SIGTERM handler and the watch ends us


def _exit_cleanly(status: int) -> None:
    """End this worker now, after multiprocessing's finalizers: a semaphore the worker made
    (tqdm's lock, for one) is unlinked and unregistered, so the resource tracker reports none
    as leaked. Only the first caller ends the worker; a later one (a second SIGTERM whose
    handler interrupts the first's cleanup, or the other thread) returns at once and leaves
    the cleanup under way to finish."""
    if not _ending.acquire(blocking=False):
        return
    from multiprocessing import util

    with contextlib.suppress(Exception):
        util._run_finalizers(0)
        util._run_finalizers()
    os._exit(status)


def _semaphore_bookkeeping() -> frozenset[object]:
    """Code in which a SIGTERM that ended the worker would leave a semaphore registered with
    the resource tracker and not cleaned up: creating one (before its finalizer exists),
    cleaning one up (unlinked, not yet unregistered), and the tracker's own messages."""
    from multiprocessing import resource_tracker, synchronize

    codes: set[object] = {
        synchronize.SemLock.__init__.__code__,
        synchronize.SemLock._cleanup.__code__,
    }
    for namespace in (resource_tracker, resource_tracker.ResourceTracker):
        for value in vars(namespace).values():
            code = getattr(value, "__code__", None)
            if code is not None:
                codes.add(code)
    return frozenset(codes)


def _in_bookkeeping(frame: FrameType | None) -> bool:
    critical = _semaphore_bookkeeping()
    while frame is not None:
        if frame.f_code in critical:
            return True
        frame = frame.f_back
    return False


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    if _in_bookkeeping(frame):
        # Interrupted inside multiprocessing's semaphore bookkeeping: let it finish, and
        # have the signal come again shortly.
        threading.Timer(RETRY_SECONDS, os.kill, (os.getpid(), signum)).start()
        return
    _exit_cleanly(128 + signum)


def die_with_run(run_pid: int) -> None:
    """Pool initializer: exit this worker as soon as the process `run_pid` exits. Ctrl-C is
    the run's to handle (it stops the pool), not each worker's; SIGTERM ends the worker
    after multiprocessing's cleanup."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SIGTERM (from `abandon`, or sent to the run's whole process group) ends the worker at
    # once, but cleanly.
    signal.signal(signal.SIGTERM, _on_sigterm)
    pidfd = None
    with contextlib.suppress(OSError, AttributeError):  # Linux >= 5.3 only
        pidfd = os.pidfd_open(run_pid)
    if process_gone(run_pid):
        os._exit(1)
    threading.Thread(target=_watch, args=(run_pid, pidfd), name="run-watch", daemon=True).start()


def abandon(pool: ProcessPoolExecutor) -> None:
    """Stop `pool` without waiting for the units its workers are running.

    The workers get SIGTERM, on which each exits at once after multiprocessing's cleanup (a
    worker that does not within `TERMINATE_SECONDS` is killed); then the pool is shut down
    and waited for, which with its workers gone is at once and closes the pool's queues. So
    the resource tracker finds no semaphore leaked at exit."""
    # The executor keeps its worker processes in `_processes` (CPython 3.8 to 3.13).
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(OSError, AttributeError, ValueError):
            process.terminate()
    for process in processes:
        with contextlib.suppress(OSError, AttributeError, ValueError, AssertionError):
            process.join(timeout=TERMINATE_SECONDS)
            if process.is_alive():
                process.kill()
    pool.shutdown(wait=True, cancel_futures=True)
