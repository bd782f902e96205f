"""JSON Lines that would exhaust the parser (issue 23, item 14): a document line nested
200,000 levels deep, or a line longer than the bound, is refused as `FILE:LINE` with the
bound (`max_nesting`, `max_line_bytes`), not a RecursionError traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heta_eval.benchmarks.jsonl import JsonlBenchmark
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError

from ..conftest import CliRunner, load_benchmark
from .conftest import jsonl_args, nothing_written, write_jsonl

CASES = [{"case_id": "q1", "query": "alpha facts"}]
DOCS = [{"document_id": "a", "text": "Alpha facts are here."}]


def _nested(depth: int) -> str:
    return (
        '{"document_id": "deep", "text": "x", "metadata": {"k": ' + "[" * depth + "]" * depth + "}}"
    )


@pytest.mark.slow
def test_a_line_nested_200000_deep_is_named_not_a_traceback(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    docs = write_jsonl(tmp_path / "docs.jsonl", [*DOCS, _nested(200_000)])
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    proc = run_cli(*jsonl_args(docs, cases))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr
    assert f"{docs}:2: arrays and objects nested more than 100 levels deep" in proc.stderr
    assert nothing_written(tmp_path / "outputs")


@pytest.mark.slow
def test_a_line_longer_than_the_bound_is_named_and_read_no_further(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    long = {"document_id": "long", "text": "word " * 400}  # about 2 kB
    docs = write_jsonl(tmp_path / "docs.jsonl", [*DOCS, long])
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    proc = run_cli(*jsonl_args(docs, cases, "benchmark.max_line_bytes=1000"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{docs}:2: line longer than 1000 bytes" in proc.stderr


@pytest.mark.parametrize("depth", [99, 101, 400])
def test_the_nesting_bound_is_exact(tmp_path: Path, depth: int) -> None:
    # The record itself is one level, its metadata a second: `depth` arrays make depth + 2.
    row = {"document_id": "d", "text": "x", "metadata": {"k": [[1]]}}
    docs = write_jsonl(tmp_path / "docs.jsonl", [json.dumps(row), _nested(depth)])
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    bench = JsonlBenchmark(documents=docs, cases=cases, max_nesting=depth + 2)
    documents, _, _ = load_benchmark(bench, tmp_path)
    assert [d.document_id for d in documents] == ["d", "deep"]
    tighter = JsonlBenchmark(documents=docs, cases=cases, max_nesting=depth + 1)
    with pytest.raises(BenchmarkDataError, match=rf"docs.jsonl:2: .* more than {depth + 1} "):
        load_benchmark(tighter, tmp_path)
