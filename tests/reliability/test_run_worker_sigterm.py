"""A unit worker stopped by SIGTERM leaves the resource tracker nothing to warn about, even
when the signal comes at the worst moment: SIGTERM to the run's process group reaches each
worker twice (the signal, then the run's `abandon`), and the second may arrive while the
first's cleanup has unlinked a semaphore but not yet unregistered it; or a SIGTERM may arrive
while the worker has registered a new semaphore but not yet its cleanup. Under load that
printed `There appear to be 1 leaked semaphore objects` after the stop line (issue 23, item 17).

The worker here is a real process with the pool initializer's handlers (`die_with_run`) and a
real multiprocessing lock and resource tracker; only the moment of the signal is chosen, by
sending it from inside multiprocessing's own calls."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from .processes import cli_env

WORKER = """
import os, signal, time
import multiprocessing
from multiprocessing import resource_tracker, synchronize
from heta_eval.run.parent_watch import die_with_run

die_with_run(os.getppid())


def signalled(real):
    def call(*args):
        result = real(*args)
        os.kill(os.getpid(), signal.SIGTERM)
        return result
    return call


if "{moment}" == "cleanup":
    lock = multiprocessing.get_context("spawn").Lock()
    # The second SIGTERM comes between unlinking the lock and unregistering it.
    synchronize.sem_unlink = signalled(synchronize.sem_unlink)
    os.kill(os.getpid(), signal.SIGTERM)
else:
    # The SIGTERM comes between registering a new lock and registering its cleanup.
    resource_tracker.register = signalled(resource_tracker.register)
    lock = multiprocessing.get_context("spawn").Lock()
time.sleep(30)
print("not stopped")
"""


@pytest.mark.parametrize("moment", ["cleanup", "creation"])
def test_a_sigterm_at_the_worst_moment_leaks_no_semaphore(moment: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(WORKER.replace("{moment}", moment))],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 128 + signal.SIGTERM, done.stdout + done.stderr
    assert done.stderr == ""
