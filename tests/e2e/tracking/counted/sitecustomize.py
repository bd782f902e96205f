"""Counts the processes a Python process starts (tests/e2e/tracking/test_processes.py puts
this directory first on PYTHONPATH): every `subprocess.Popen`, `os.fork`, `os.forkpty`,
`os.posix_spawn`, `os.spawn*` and `os.system` (Python's audit events) and every interpreter
multiprocessing spawns (`multiprocessing.util.spawnv_passfds`, which raises no audit event).
At exit, one JSON line per process is appended to $HETA_EVAL_COUNT_FILE: its pid, its
parent's, its argv and what it started. A child Python process with this directory on its
path appends its own line."""

import atexit
import json
import os
import sys

_PID = os.getpid()
_STARTED: list[list[str]] = []
_EVENTS = {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system"}


def _audit(event: str, args: tuple) -> None:
    if event in _EVENTS and os.getpid() == _PID:
        _STARTED.append([event, repr(args[:2])[:300]])


def _counted_spawn(real):  # type: ignore[no-untyped-def]
    def spawnv_passfds(path, args, passfds):  # type: ignore[no-untyped-def]
        _STARTED.append(["multiprocessing.spawnv_passfds", repr(list(args)[:4])[:300]])
        return real(path, args, passfds)

    return spawnv_passfds


def _report() -> None:
    line = {"pid": _PID, "ppid": os.getppid(), "argv": sys.argv[:4], "started": _STARTED}
    with open(os.environ["HETA_EVAL_COUNT_FILE"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


if os.environ.get("HETA_EVAL_COUNT_FILE"):
    import multiprocessing.util

    multiprocessing.util.spawnv_passfds = _counted_spawn(multiprocessing.util.spawnv_passfds)
    sys.addaudithook(_audit)
    atexit.register(_report)
