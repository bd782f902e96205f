"""Workers shared by the jobs of a sweep that run one after another in one process.

With Hydra's basic launcher every job of a multirun is a call in the launching process. The
sweep callback (`sweep_callback.MlflowSweepCallback`) turns sharing on there (`enable`): the jobs'
MLflow trackers then talk to one tracker worker (MLflow imported and its store opened once
for the sweep, not once per job), and their report.html figures are drawn by one figure
worker, the page written in the background while the next job runs (`HtmlPages`). A job
hands its tracking over and does not wait for it; `finish` waits for everything handed
over (the sweep's end summary needs every job's run complete), `shutdown` also stops the
workers. Without `enable` (a single run, a job in a launcher's worker process) nothing
here is used.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from heta_eval.run.html_pages import HtmlPages
    from heta_eval.run.worker_link import WorkerLink

log = logging.getLogger(__name__)

FINISH_TIMEOUT = 600.0  # seconds for what the jobs handed over: a slow server, large artifacts

_lock = threading.Lock()
_enabled = False
_tracker_link: WorkerLink | None = None
_pages: HtmlPages | None = None
_finishing: dict[str, Future[Any]] = {}  # run state directory -> its `finish` call
_parent: Future[str | None] | None = None  # the parent run being opened in the shared worker

PARENT_PLACEHOLDER = "@sweep-parent"
"""A job's parent run id while the shared worker is still opening it: the worker puts the
parent's id in its place (it opens the parent before it reads the job's calls)."""


def enable() -> None:
    """Share the workers between the jobs of this process (and stop them at its exit)."""
    global _enabled
    with _lock:
        if not _enabled:
            atexit.register(shutdown)
        _enabled = True


def enabled() -> bool:
    """Whether the jobs of this process share their workers."""
    return _enabled


def tracker_link(spawn: Callable[[], WorkerLink]) -> WorkerLink:
    """The sweep's tracker worker, started with `spawn` when there is none running."""
    global _tracker_link
    with _lock:
        if _tracker_link is None or not _tracker_link.alive:
            _tracker_link = spawn()
        return _tracker_link


def discard(link: WorkerLink) -> None:
    """Stop sharing `link` (it failed); the next job starts another worker."""
    global _tracker_link
    with _lock:
        if _tracker_link is link:
            _tracker_link = None


def finishing(state_dir: Path, call: Future[Any]) -> None:
    """A job handed over the completion of the run state `state_dir` (answered by `call`)."""
    with _lock:
        _finishing[str(state_dir)] = call


def wait_for_state(state_dir: Path, timeout: float = FINISH_TIMEOUT) -> None:
    """Wait until a completion handed over for `state_dir` is recorded: a later job of the
    same identity (a sweep over a setting outside it) then finds it and reuses it."""
    with _lock:
        call = _finishing.pop(str(state_dir), None)
    if call is not None:
        with contextlib.suppress(Exception):  # its failure was logged when it came
            call.exception(timeout=timeout)


def opening_parent(run_id: Future[str | None]) -> None:
    """The shared worker is opening the sweep's parent run; `run_id` resolves to its id
    (None when it could not be created)."""
    global _parent
    with _lock:
        _parent = run_id


def parent_placeholder() -> str | None:
    """What a job gives as its parent run id while the parent is being opened (then the
    shared worker fills it in); None when no parent is being opened."""
    return PARENT_PLACEHOLDER if _parent is not None else None


def resolve_parent(run_id: str | None, timeout: float = FINISH_TIMEOUT) -> str | None:
    """`run_id`, or for the placeholder the parent's id once opened (None if it failed)."""
    if run_id != PARENT_PLACEHOLDER:
        return run_id
    parent = _parent
    if parent is None:
        return None
    try:
        return parent.result(timeout=timeout)
    except Exception:
        return None


def html_pages() -> HtmlPages:
    """The sweep's report.html writer (its figure worker started on first use)."""
    global _pages
    from heta_eval.run.html_pages import HtmlPages

    with _lock:
        if _pages is None:
            _pages = HtmlPages()
        return _pages


def finish(timeout: float = FINISH_TIMEOUT) -> None:
    """Wait until every page handed over is written and every tracking call answered."""
    with _lock:
        pages, link = _pages, _tracker_link
    if pages is not None:
        pages.wait(timeout)
    if link is not None and not link.wait(timeout):
        log.warning("the MLflow tracking worker did not finish within %.0f s", timeout)


def shutdown() -> None:
    """Finish, then stop the shared workers (at the sweep's end and at exit)."""
    global _tracker_link, _pages
    finish()
    with _lock:
        pages, link = _pages, _tracker_link
        _pages = _tracker_link = None
        _finishing.clear()
    if pages is not None:
        pages.close()
    if link is not None:
        link.close(FINISH_TIMEOUT)
    from heta_eval.run import sweep_loads

    sweep_loads.forget()  # the last job's benchmark, kept for a next job that will not come
