"""A test component that stops a real `heta-eval` process halfway, in a state it cannot leave
by itself, for a test to signal it, kill it or cut off its tracking server there.

Used through `_target_` (`evaluator.extra=[{_target_:tests.gates.PausesAfter,...}]`) in a
subprocess with the repository on PYTHONPATH; `pause_after` builds that override.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from heta_eval.protocols import Evaluator
from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse


class PausesAfter(Evaluator):
    """An evaluator (scoring 1.0) that lets `after` cases through, then creates the file
    `paused` and holds every later case until the file `gate` exists (at most `timeout`
    seconds). The cases before are finished and journaled; the run cannot end meanwhile,
    and a signal still stops it (the wait is asynchronous). With `gate` already there
    (a rerun), nothing is held."""

    name = "paused"

    def __init__(self, paused: str, gate: str, after: int = 12, timeout: float = 180.0) -> None:
        self.paused = Path(paused)
        self.gate = Path(gate)
        self.after = after
        self.timeout = timeout
        self.seen = 0

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        self.seen += 1
        if self.seen > self.after and not self.gate.exists():
            os.close(os.open(self.paused, os.O_CREAT | os.O_WRONLY, 0o644))
            deadline = time.monotonic() + self.timeout
            while not self.gate.exists():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.gate} did not appear in {self.timeout} s")
                await asyncio.sleep(0.02)
        return EvaluationScore(name=self.name, value=1.0)


def pause_after(paused: Path, gate: Path, after: int = 12) -> str:
    """The override that adds `PausesAfter` to a run's evaluators."""
    return (
        "evaluator.extra=[{_target_:tests.gates.PausesAfter,"
        f"paused:'{paused}',gate:'{gate}',after:{after}}}]"
    )


def wait_for_file(path: Path, process: object, timeout: float = 240.0) -> None:
    """Wait until `path` exists while `process` (a Popen) runs; fail with its output if it
    ends first or the time is up."""
    import subprocess

    assert isinstance(process, subprocess.Popen)
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            out, err = process.communicate(timeout=60) if process.poll() is not None else ("", "")
            said = f"(exit {process.returncode}):\n{out}\n{err}"
            raise AssertionError(f"{path} did not appear {said}")
        time.sleep(0.02)
