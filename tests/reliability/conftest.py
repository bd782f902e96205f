"""Helpers of the reliability suite: user benchmark files, a user's own code, reading back
what a run left."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from mlflow import MlflowClient

from heta_eval.records import EvaluationReport

from ..cli_in_process import CliResult, call_cli


def write_jsonl(path: Path, rows: list[object]) -> Path:
    """Write `rows` (dicts as JSON, strings verbatim) one per line."""
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n",
        encoding="utf-8",
    )
    return path


def jsonl_args(documents: Path, cases: Path, *extra: str) -> list[str]:
    """CLI overrides that evaluate the user's `documents` and `cases` files."""
    return [
        "benchmark=jsonl",
        f"benchmark.documents={documents}",
        f"benchmark.cases={cases}",
        *extra,
    ]


def small_benchmark(root: Path, cases: int = 10, boom_every: int = 0) -> tuple[Path, Path]:
    """Ten one-topic documents and `cases` cases; every `boom_every`-th query says 'boom'."""
    topics = ["kelp", "comet", "glacier", "violin", "copper", "falcon", "tundra", "saffron"]
    topics += ["basalt", "orchid"]
    docs = write_jsonl(
        root / "documents.jsonl",
        [
            {"document_id": t, "text": f"The {t} is described here. {t.title()} facts about {t}."}
            for t in topics
        ],
    )
    rows = []
    for i in range(cases):
        topic = topics[i % len(topics)]
        boom = boom_every and i % boom_every == 0
        rows.append(
            {
                "case_id": f"q{i}",
                "query": f"tell me about the {topic}" + (" boom" if boom else ""),
                "answers": [topic],
                "evidence": [{"locator": {"document_id": topic}}],
            }
        )
    return docs, write_jsonl(root / "cases.jsonl", rows)


def report_path(stdout: str) -> Path:
    """The report a successful CLI run printed."""
    line = next(line for line in stdout.splitlines() if line.startswith("report: "))
    return Path(line.removeprefix("report: "))


def mlflow_runs(root: Path) -> list:
    """Every run in the MLflow store under `root` (none when no store was created)."""
    if not (root / "mlflow.db").exists():
        return []
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiments = client.search_experiments()
    return client.search_runs([e.experiment_id for e in experiments])


def nothing_written(root: Path) -> bool:
    """No MLflow store, no run and no report under `root`."""
    return not (root / "mlflow.db").exists() and not list(root.rglob("report.json"))


def read_report(path: Path) -> EvaluationReport:
    """A report written by a run, validated."""
    return EvaluationReport.read_json(path)


def forget_modules(directory: Path) -> None:
    """Drop every imported module loaded from under `directory`: the next import reads the
    files again, as a user's next run (a new process) would."""
    inside = str(directory.resolve()) + os.sep
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if isinstance(origin, str) and origin.startswith(inside):
            del sys.modules[name]


@pytest.fixture
def user_code(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], Path]]:
    """`user_code(directory)`: the user's own packages under `directory` importable by the
    runs of this test (as PYTHONPATH would make them), and forgotten after it."""
    added: list[Path] = []

    def add(directory: Path) -> Path:
        monkeypatch.syspath_prepend(str(directory.resolve()))
        added.append(directory)
        return directory

    yield add
    for directory in added:
        forget_modules(directory)


class _Output(NamedTuple):
    out: str
    err: str


class _Buffers:
    """What `call_cli` reads from capsys, for a run outside a test: two string buffers."""

    def __init__(self) -> None:
        self.out, self.err = io.StringIO(), io.StringIO()

    def readouterr(self) -> _Output:
        said = _Output(self.out.getvalue(), self.err.getvalue())
        for buffer in (self.out, self.err):
            buffer.seek(0)
            buffer.truncate()
        return said


def cli_once(cwd: Path, *args: str) -> CliResult:
    """`heta-eval ARGS` in this process, in `cwd` with outputs under `cwd`/outputs, outside
    any one test: for a module-scoped fixture whose evaluation several tests read."""
    streams = _Buffers()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdout", streams.out)
        patch.setattr(sys, "stderr", streams.err)
        argv = [f"paths.root={cwd / 'outputs'}", *args]
        return call_cli("heta-eval", argv, cwd=cwd, monkeypatch=patch, capsys=streams)  # type: ignore[arg-type]
