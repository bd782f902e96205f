"""Progress of a run's stages: rich bars on a terminal, one log line per stage otherwise.

A `ProgressReporter` opens stages (`with reporter.stage("documents", 36, "documents") as s:`
then `s.advance()`), and renders them by its mode:

- `bars`: a rich progress display on stderr (counts, rate, elapsed time and ETA); stages
  opened through a `scoped(..., transient=True)` reporter (one unit's parse, index and
  queries) disappear when done, the others stay on screen;
- `lines`: one log line when a stage starts and one when it ends, with counts, elapsed time
  and rate (and, for long stages, a line every 10% at most every 10 s), so CI logs stay short;
  transient stages log nothing;
- `off`: nothing;
- `auto`: `bars` when stderr is a terminal (rich's detection, which honours `FORCE_COLOR`,
  `TTY_COMPATIBLE` and `NO_COLOR`), else `lines`.

Progress is display only: it never changes what a run computes. rich is imported only when
bars are drawn.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Literal, Protocol

log = logging.getLogger(__name__)

ProgressMode = Literal["auto", "bars", "lines", "off"]
_MILESTONE_SECONDS = 10.0


class StageHandle(Protocol):
    """What a stage's code sees: advance the count of finished items."""

    def advance(self, n: int = 1) -> None:
        """Count `n` more items as done."""
        ...


class StageReporter(Protocol):
    """Anything that opens stages (a ProgressReporter, or a scoped view of one)."""

    def stage(
        self, name: str, total: int | None = None, unit: str = "items"
    ) -> contextlib.AbstractContextManager[StageHandle]:
        """Open a stage of `total` items (None: unknown), closed when the block ends."""
        ...


def _format_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def _format_count(value: float, unit: str) -> str:
    if unit == "bytes":
        from rich.filesize import decimal

        return decimal(int(value))
    return f"{int(value)}"


class _Stage:
    """One open stage: counts what is done, reports it through its backend."""

    def __init__(self, backend: _Backend, name: str, total: int | None, unit: str) -> None:
        self.backend = backend
        self.name = name
        self.total = total
        self.unit = unit
        self.completed = 0
        self.started = time.perf_counter()
        self.token: Any = None
        self.lock = threading.Lock()

    def advance(self, n: int = 1) -> None:
        with self.lock:
            self.completed += n
        self.backend.advance(self, n)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def counts(self) -> str:
        done = _format_count(self.completed, self.unit)
        if self.total is None:
            return f"{done} {self.unit}" if self.unit != "bytes" else done
        total = _format_count(self.total, self.unit)
        return f"{done}/{total} {self.unit}" if self.unit != "bytes" else f"{done}/{total}"

    def rate(self) -> str:
        per_second = self.completed / max(self.elapsed(), 1e-9)
        if self.unit == "bytes":
            return f"{_format_count(per_second, 'bytes')}/s"
        return f"{per_second:.1f} {self.unit}/s"


class _Backend(Protocol):
    def open(self, stage: _Stage, transient: bool) -> None: ...

    def advance(self, stage: _Stage, n: int) -> None: ...

    def close(self, stage: _Stage, transient: bool, failed: bool) -> None: ...


class _Off:
    def open(self, stage: _Stage, transient: bool) -> None:
        pass

    def advance(self, stage: _Stage, n: int) -> None:
        pass

    def close(self, stage: _Stage, transient: bool, failed: bool) -> None:
        pass


class _Lines:
    """One log line at the start and at the end of each (non-transient) stage."""

    def __init__(self, milestone_seconds: float = _MILESTONE_SECONDS) -> None:
        self.milestone_seconds = milestone_seconds

    def open(self, stage: _Stage, transient: bool) -> None:
        stage.token = {"transient": transient, "last_line": time.perf_counter(), "tenth": 0}
        if not transient:
            what = f"{stage.total} {stage.unit}" if stage.total is not None else "started"
            if stage.unit == "bytes" and stage.total is not None:
                what = _format_count(stage.total, "bytes")
            log.info("%s: %s", stage.name, what)

    def advance(self, stage: _Stage, n: int) -> None:
        state = stage.token
        if state["transient"] or not stage.total:
            return
        tenth = min(10, stage.completed * 10 // stage.total)
        now = time.perf_counter()
        quiet_long_enough = now - state["last_line"] >= self.milestone_seconds
        if state["tenth"] < tenth < 10 and quiet_long_enough:
            state["tenth"], state["last_line"] = tenth, now
            per_second = stage.completed / max(stage.elapsed(), 1e-9)
            remaining = (stage.total - stage.completed) / max(per_second, 1e-9)
            log.info(
                "%s: %s (%d%%), %s, ETA %s",
                stage.name,
                stage.counts(),
                tenth * 10,
                stage.rate(),
                _format_duration(remaining),
            )

    def close(self, stage: _Stage, transient: bool, failed: bool) -> None:
        if transient:
            return
        log.info(
            "%s: %s in %s (%s)%s",
            stage.name,
            stage.counts(),
            _format_duration(stage.elapsed()),
            stage.rate(),
            ", stopped by an error" if failed else "",
        )


class _Bars:
    """A rich progress display on stderr, started with the first open stage."""

    def __init__(self, console: Any = None) -> None:
        self._console = console
        self._lock = threading.RLock()
        self._progress: Any = None
        self._open = 0
        self._swapped: list[tuple[logging.StreamHandler[Any], Any]] = []

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import Progress

        out, err = sys.stdout, sys.stderr
        self._progress = Progress(*_bar_columns(), console=self._console or Console(stderr=True))
        self._progress.start()
        # Log handlers hold the streams they were given; point them at rich's proxies while
        # the bars are live, so log lines print above the bars instead of through them.
        for handler in {*logging.getLogger().handlers, *logging.getLogger("heta_eval").handlers}:
            if type(handler) is logging.StreamHandler:
                proxy = sys.stdout if handler.stream is out else None
                proxy = sys.stderr if handler.stream is err else proxy
                if proxy is not None and proxy is not handler.stream:
                    self._swapped.append((handler, handler.setStream(proxy)))

    def _stop(self) -> None:
        for handler, stream in self._swapped:
            handler.setStream(stream)
        self._swapped = []
        self._progress.stop()
        self._progress = None

    def open(self, stage: _Stage, transient: bool) -> None:
        with self._lock:
            if self._progress is None:
                self._start()
            self._open += 1
            stage.token = self._progress.add_task(stage.name, total=stage.total, unit=stage.unit)

    def advance(self, stage: _Stage, n: int) -> None:
        with self._lock:
            if self._progress is not None:
                self._progress.advance(stage.token, n)

    def close(self, stage: _Stage, transient: bool, failed: bool) -> None:
        with self._lock:
            if transient:
                self._progress.remove_task(stage.token)
            elif stage.total is None:
                # An open-ended stage shows as finished once it is.
                self._progress.update(stage.token, total=stage.completed)
            self._open -= 1
            if self._open == 0:
                self._stop()


def _bar_columns() -> list[Any]:
    """Description, bar, `done/total unit`, rate, elapsed time and ETA."""
    from rich.progress import (
        BarColumn,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class CountColumn(ProgressColumn):
        """`done/total unit`, in kB/MB/GB for bytes."""

        def render(self, task: Any) -> Text:
            unit = task.fields.get("unit", "items")
            done = _format_count(task.completed, unit)
            total = "?" if task.total is None else _format_count(task.total, unit)
            label = "" if unit == "bytes" else f" {unit}"
            return Text(f"{done}/{total}{label}", style="progress.download")

    class RateColumn(ProgressColumn):
        """Items (or bytes) per second."""

        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            if speed is None:
                return Text("")
            unit = task.fields.get("unit", "items")
            shown = f"{_format_count(speed, 'bytes')}" if unit == "bytes" else f"{speed:.1f}"
            return Text(f"{shown}/s", style="progress.data.speed")

    class EtaColumn(TimeRemainingColumn):
        """The estimated time left, labelled; nothing once done."""

        def render(self, task: Any) -> Text:
            if task.finished or task.total is None:
                return Text("")
            return Text.assemble("ETA ", super().render(task))

    return [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        CountColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        EtaColumn(),
    ]


def resolve_mode(mode: ProgressMode, console: Any = None) -> Literal["bars", "lines", "off"]:
    """`auto` → `bars` when stderr (or `console`) is a terminal, else `lines`."""
    if mode != "auto":
        return mode
    from rich.console import Console

    return "bars" if (console or Console(stderr=True)).is_terminal else "lines"


class ProgressReporter:
    """Opens stages and renders them as bars, log lines or nothing (see the module doc).

    `console`: the rich Console bars are drawn on (default: stderr). `milestone_seconds`: in
    lines mode, the least time between two lines of a long stage. A reporter is shared by a
    run: `scoped(prefix, transient)` gives a view whose stage names start with `prefix`, drawn
    on the same display.
    """

    def __init__(
        self,
        mode: ProgressMode = "auto",
        *,
        console: Any = None,
        prefix: str = "",
        transient: bool = False,
        backend: _Backend | None = None,
        milestone_seconds: float = _MILESTONE_SECONDS,
    ) -> None:
        self.mode = resolve_mode(mode, console) if backend is None else mode
        if backend is None:
            backend = (
                _Bars(console)
                if self.mode == "bars"
                else _Lines(milestone_seconds)
                if self.mode == "lines"
                else _Off()
            )
        self._backend = backend
        self._prefix = prefix
        self._transient = transient

    def scoped(self, prefix: str, *, transient: bool = False) -> ProgressReporter:
        """A view whose stages are named `{prefix} {name}` (and transient if asked)."""
        return ProgressReporter(
            self.mode, prefix=prefix, transient=transient, backend=self._backend
        )

    @contextlib.contextmanager
    def stage(self, name: str, total: int | None = None, unit: str = "items") -> Iterator[_Stage]:
        """Open a stage of `total` items of `unit` (None: not known); the block is its span."""
        title = f"{self._prefix} {name}" if self._prefix else name
        stage = _Stage(self._backend, title, total, unit)
        self._backend.open(stage, self._transient)
        failed = True
        try:
            yield stage
            failed = False
        finally:
            self._backend.close(stage, self._transient, failed)


NO_PROGRESS = ProgressReporter("off")
_CURRENT: ContextVar[ProgressReporter | None] = ContextVar("heta_eval_progress", default=None)


def current() -> ProgressReporter:
    """The reporter of the run in progress (see `use`), else a new `auto` reporter."""
    return _CURRENT.get() or ProgressReporter("auto")


@contextlib.contextmanager
def use(reporter: ProgressReporter) -> Iterator[ProgressReporter]:
    """Make `reporter` the `current()` one within the block (downloads in prepare() use it)."""
    token = _CURRENT.set(reporter)
    try:
        yield reporter
    finally:
        _CURRENT.reset(token)
