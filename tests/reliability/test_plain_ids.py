"""Names and ids that cannot be stored or shown as they are (issue 23, item 15): a document
name over 255 bytes is refused when the file is read, as `FILE:LINE`, not dropped at store
time with its cases failing; ids with NUL, a newline or a bidirectional control character
are refused the same way (ids are bare names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval.benchmarks.jsonl import JsonlBenchmark
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError

from ..conftest import CliRunner, load_benchmark
from .conftest import jsonl_args, nothing_written, write_jsonl

CASES = [{"case_id": "q1", "query": "alpha facts", "evidence": [{"locator": {"document_id": "a"}}]}]
DOCS = [{"document_id": "a", "text": "Alpha facts are here."}]


def test_a_name_over_255_bytes_is_refused_at_parse_time(run_cli: CliRunner, tmp_path: Path) -> None:
    name = "é" * 126 + ".txt"  # 130 characters, 256 bytes in UTF-8
    docs = write_jsonl(
        tmp_path / "docs.jsonl", [*DOCS, {"document_id": "b", "name": name, "text": "b"}]
    )
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    proc = run_cli(*jsonl_args(docs, cases))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "Errno 36" not in proc.stderr
    assert (
        f"{docs}:2: name: Value error, name is 256 bytes long in UTF-8; a file name may have "
        "at most 255"
    ) in proc.stderr
    assert nothing_written(tmp_path / "outputs")


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ("a\x00b", "a control character (U+0000)"),
        ("a\nb", "a line break (U+000A)"),
        ("a\u2028b", "a line break (U+2028)"),
        ("a\tb", "a control character (U+0009)"),
        ("admin\u202egnp.exe", "a bidirectional control character (U+202E)"),
        ("a\u2066b", "a bidirectional control character (U+2066)"),
    ],
)
@pytest.mark.parametrize("field", ["document_id", "case_id", "unit_id"])
def test_ids_that_are_not_plain_names_are_refused_with_file_and_line(
    tmp_path: Path, value: str, what: str, field: str
) -> None:
    doc = {"document_id": "b", "text": "b"}
    case = {"case_id": "q2", "query": "beta"}
    if field == "case_id":
        case[field] = value
    else:
        doc[field] = value
    docs = write_jsonl(tmp_path / "docs.jsonl", [*DOCS, doc])
    cases = write_jsonl(tmp_path / "cases.jsonl", [*CASES, case])
    bench = JsonlBenchmark(documents=docs, cases=cases)
    where = cases if field == "case_id" else docs
    with pytest.raises(BenchmarkDataError) as refused:
        load_benchmark(bench, tmp_path)
    message = str(refused.value)
    assert message.startswith(f"{where}:2: "), message
    assert f"{field} must be a plain name: {what}" in message


def test_ordinary_names_in_any_script_are_kept(tmp_path: Path) -> None:
    name = "é" * 125 + ".txt"  # 254 bytes
    docs = write_jsonl(
        tmp_path / "docs.jsonl",
        [*DOCS, {"document_id": "文書-ü ש", "name": name, "text": "b"}],
    )
    cases = write_jsonl(tmp_path / "cases.jsonl", [*CASES, {"case_id": "q 2 ü", "query": "b"}])
    documents, cases_read, _ = load_benchmark(JsonlBenchmark(documents=docs, cases=cases), tmp_path)
    assert [d.name for d in documents][1] == name
    assert [c.case_id for c in cases_read] == ["q1", "q 2 ü"]
