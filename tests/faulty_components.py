"""Real (not mocked) components that fail on purpose, to test how failures are recorded."""

from __future__ import annotations

from collections.abc import Sequence

from heta_eval.kb import BM25Index
from heta_eval.kb.documents import Chunk
from heta_eval.kb.index.base import BaseIndexBuilder, BaseSearchIndex, Hits, SearchIndex
from heta_eval.protocols import Evaluator
from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse


class QueryFailsOnWord(BaseIndexBuilder):
    """A BM25 index whose search raises for queries containing `word`."""

    def __init__(self, word: str = "boom") -> None:
        self.word = word

    def build(self, chunks: Sequence[Chunk]) -> QueryFailsOnWord._Built:
        return QueryFailsOnWord._Built(BM25Index().build(chunks), self.word)

    class _Built(BaseSearchIndex):
        def __init__(self, inner: SearchIndex, word: str) -> None:
            self.inner = inner
            self.word = word

        def search(self, queries: Sequence[str], top_k: int) -> list[Hits]:
            if any(self.word in q.lower() for q in queries):
                raise RuntimeError(f"index refused a query containing {self.word!r}")
            return self.inner.search(queries, top_k)


class BuildAlwaysFails(BaseIndexBuilder):
    """An index builder that cannot build."""

    def build(self, chunks: Sequence[Chunk]) -> None:
        raise OSError("disk full while writing the index")


class ScoreFailsForCase(Evaluator):
    """An evaluator that raises for one case id and scores 1.0 otherwise."""

    name = "fragile"

    def __init__(self, case_id: str) -> None:
        self.case_id = case_id

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        if case.case_id == self.case_id:
            raise ZeroDivisionError("fragile evaluator divided by zero")
        return EvaluationScore(name=self.name, value=1.0)


class SlowQueries(BaseIndexBuilder):
    """A BM25 index (same settings as BM25Index) that takes `seconds` per query, so that a
    run can be interrupted halfway. With `after_file` (a glob), queries wait until a file
    matches it: `{root}/state/*/tracking.json` holds them until the run's tracking run
    exists (MLflow starts in a worker while the run goes on)."""

    def __init__(self, seconds: float = 0.05, after_file: str | None = None, **bm25: object):
        self.seconds = seconds
        self.after_file = after_file
        self.bm25 = BM25Index(**bm25)  # type: ignore[arg-type]

    def build(self, chunks: Sequence[Chunk]) -> SlowQueries._Built:
        return SlowQueries._Built(self.bm25.build(chunks), self.seconds, self.after_file)

    class _Built(BaseSearchIndex):
        def __init__(self, inner: SearchIndex, seconds: float, after_file: str | None) -> None:
            self.inner = inner
            self.seconds = seconds
            self.after_file = after_file

        def search(self, queries: Sequence[str], top_k: int) -> list[Hits]:
            import glob
            import time

            deadline = time.monotonic() + 180
            while self.after_file and not glob.glob(self.after_file):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"nothing matched {self.after_file} in 180 s")
                time.sleep(0.05)
            time.sleep(self.seconds * len(queries))
            return self.inner.search(queries, top_k)


class KillsItsProcess(Evaluator):
    """An evaluator (scoring 1.0) that SIGKILLs its own process at a chosen moment, once.

    Constructing it installs an audit hook (sys.addaudithook) that counts the events
    `event` whose first argument (a path) contains `path_contains`: `open` (opened for
    writing) or `os.rename` (also raised by os.replace; the path is the destination). The
    `nth` such event kills the process before it happens; `event="evaluate"` counts this
    evaluator's own calls instead. `marker` is created just before the kill and disarms
    every later instance, so that the rerun of the same configuration lives.
    """

    name = "survivor"

    def __init__(
        self, marker: str, event: str = "evaluate", path_contains: str = "", nth: int = 1
    ) -> None:
        import sys
        from pathlib import Path

        self.marker = Path(marker)
        self.event = event
        self.path_contains = path_contains
        self.nth = nth
        self.seen = 0
        self.armed = not self.marker.exists()
        if self.armed and event != "evaluate":
            sys.addaudithook(self._hook)

    def _kill(self) -> None:
        import os
        import signal

        self.armed = False
        fd = os.open(self.marker, os.O_CREAT | os.O_WRONLY, 0o644)
        os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)

    def _hook(self, event: str, args: tuple) -> None:
        import os

        if not self.armed or event != self.event or not args:
            return
        if event == "open":
            path, flags = args[0], args[2] if len(args) > 2 else 0
            writing = isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
            if not writing:
                return
        else:
            path = args[1] if event == "os.rename" and len(args) > 1 else args[0]
        if isinstance(path, bytes):
            path = path.decode(errors="replace")
        if not isinstance(path, str | os.PathLike) or self.path_contains not in os.fspath(path):
            return
        self.seen += 1
        if self.seen >= self.nth:
            self._kill()

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        if self.armed and self.event == "evaluate":
            self.seen += 1
            if self.seen >= self.nth:
                self._kill()
        return EvaluationScore(name=self.name, value=1.0)


class WaitsForFile(Evaluator):
    """An evaluator (scoring 1.0) that holds each case until the file `gate` exists, so a
    test can keep a run in the middle of its evaluation for as long as it needs."""

    name = "gated"

    def __init__(self, gate: str, timeout: float = 120.0) -> None:
        from pathlib import Path

        self.gate = Path(gate)
        self.timeout = timeout

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        import asyncio
        import time

        deadline = time.monotonic() + self.timeout
        while not self.gate.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.gate} did not appear")
            await asyncio.sleep(0.05)
        return EvaluationScore(name=self.name, value=1.0)


class KillsItsWorkerOnce(BaseIndexBuilder):
    """A BM25 index builder whose first build, in the whole test, SIGKILLs its own process
    (a Ray worker); every later build (the retried task) is a plain BM25Index build. The
    marker file, created atomically before the kill, says that the kill happened."""

    def __init__(self, marker: str, **bm25: object) -> None:
        self.marker = marker
        self.bm25 = bm25

    def build(self, chunks: Sequence[Chunk]) -> object:
        import os
        import signal

        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return BM25Index(**self.bm25).build(chunks)  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable: the process was killed")
