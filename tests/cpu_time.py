"""CPU seconds per test, for benchmarks/suite_durations.py: each test's report (in the JUnit
XML, `--junitxml`) gets a `cpu_seconds` property, the user + system time of the test's worker
and of the child processes it waited for (CLI runs, sweeps), from setup to teardown. Servers
and Ray workers that outlive the wait of the test are not in it. With them, `worker` (the
xdist worker) and `ended` (seconds since the epoch at teardown): when each worker finished,
and which test it ran last."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Generator

import pytest

_started: dict[str, float] = {}


def _cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _started[item.nodeid] = _cpu_now()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report = outcome.get_result()
    if call.when == "teardown" and item.nodeid in _started:
        seconds = _cpu_now() - _started.pop(item.nodeid)
        report.user_properties.append(("cpu_seconds", f"{seconds:.2f}"))
        report.user_properties.append(("worker", os.environ.get("PYTEST_XDIST_WORKER", "")))
        report.user_properties.append(("ended", f"{time.time():.1f}"))
