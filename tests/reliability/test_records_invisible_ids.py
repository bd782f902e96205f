"""Ids that print as another id (issue 36, item 15): a zero-width space was accepted in an id,
so `q1` and `q1\u200b` were two cases that read the same in every table. Invisible formatting
characters are refused like control characters, as `FILE:LINE`, and an id has a bounded
length."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval.benchmarks.jsonl import JsonlBenchmark
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError

from ..conftest import load_benchmark
from .conftest import write_jsonl

DOCS = [{"document_id": "a", "text": "Alpha facts are here."}]
CASES = [{"case_id": "q1", "query": "alpha facts"}]


@pytest.mark.parametrize(
    ("value", "code"),
    [("q1\u200b", "200B"), ("q\u2060x", "2060"), ("\ufeffq", "FEFF"), ("q\u00adx", "00AD")],
)
@pytest.mark.parametrize("field", ["document_id", "case_id"])
def test_an_invisible_character_in_an_id_is_refused_at_its_line(
    tmp_path: Path, value: str, code: str, field: str
) -> None:
    doc = {"document_id": "b", "text": "b"}
    case = {"case_id": "q2", "query": "beta"}
    (case if field == "case_id" else doc)[field] = value
    docs = write_jsonl(tmp_path / "docs.jsonl", [*DOCS, doc])
    cases = write_jsonl(tmp_path / "cases.jsonl", [*CASES, case])
    with pytest.raises(BenchmarkDataError) as refused:
        load_benchmark(JsonlBenchmark(documents=docs, cases=cases), tmp_path)
    message = str(refused.value)
    where = cases if field == "case_id" else docs
    assert message.startswith(f"{where}:2: "), message
    assert (
        f"{field} must be a plain name: an invisible formatting character (zero-width or soft "
        f"hyphen) (U+{code})"
    ) in message


def test_an_id_beyond_the_bound_is_refused(tmp_path: Path) -> None:
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    cases = write_jsonl(tmp_path / "cases.jsonl", [*CASES, {"case_id": "q" * 1001, "query": "b"}])
    with pytest.raises(BenchmarkDataError, match="case_id is 1001 characters long; an id may"):
        load_benchmark(JsonlBenchmark(documents=docs, cases=cases), tmp_path)
