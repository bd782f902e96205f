"""Bad benchmark files: errors name the file, line and field and leave no run behind.

Malformed JSON, text that is not UTF-8, duplicate ids, evidence naming documents the
benchmark lacks (a warning with the count, an error with `runner.strict`), BEIR judgments for
unknown queries; JSON Lines that would exhaust the parser (issue 23, item 14: a line nested
200,000 levels deep, a line longer than `max_line_bytes`, refused as `FILE:LINE` with the
bound, not a RecursionError traceback); names and ids that cannot be stored or shown as they
are (issue 23, item 15: a name over 255 bytes, ids with NUL, a line break or a bidirectional
control character, names with path separators or `..`)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from heta_eval.benchmarks import BenchmarkDataError, JsonlBenchmark
from heta_eval.benchmarks.beir import BeirBenchmark
from heta_eval.records import BenchmarkWorkspace

from ..conftest import InProcessCli, load_benchmark
from .conftest import jsonl_args, nothing_written, read_report, report_path, write_jsonl

CASES = [
    {"case_id": "q1", "query": "alpha facts", "evidence": [{"locator": {"document_id": "a"}}]},
    {"case_id": "q2", "query": "beta facts", "evidence": [{"locator": {"document_id": "b"}}]},
]
DOCS = [
    {"document_id": "a", "text": "Alpha facts are here."},
    {"document_id": "b", "text": "Beta facts are there."},
]


def _refused(cli: InProcessCli, tmp_path: Path, documents: Path, cases: Path, *extra: str) -> str:
    done = cli(*jsonl_args(documents, cases, *extra))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert nothing_written(tmp_path / "outputs")
    return done.stderr


def test_malformed_json_lines_name_file_and_line(cli: InProcessCli, tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    docs = write_jsonl(tmp_path / "docs.jsonl", [DOCS[0], '{"document_id": "b", "text": '])
    assert f"{docs}:2: invalid JSON at column" in _refused(cli, tmp_path, docs, cases)
    docs = write_jsonl(tmp_path / "docs.jsonl", [DOCS[0], "", '["not", "an", "object"]'])
    assert f"{docs}:3: expected a JSON object, got list" in _refused(cli, tmp_path, docs, cases)
    docs = write_jsonl(tmp_path / "docs.jsonl", [DOCS[0], {"text": "no id"}])
    assert f"{docs}:2: document_id: Field required" in _refused(cli, tmp_path, docs, cases)


def test_a_latin1_file_is_named_with_its_line_as_not_utf8(
    cli: InProcessCli, tmp_path: Path
) -> None:
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    cases = tmp_path / "cases.jsonl"
    first = b'{"case_id": "q1", "query": "plain"}\n'
    second = '{"case_id": "q2", "query": "caf\xe9 cr\xe8me"}\n'
    cases.write_bytes(first + second.encode("latin-1"))
    stderr = _refused(cli, tmp_path, docs, cases)
    offset = len(first) + second.index("\xe9")
    assert f"{cases}:2: not valid UTF-8 at byte {offset} of the file" in stderr
    assert "re-encode it" in stderr


@pytest.mark.parametrize(
    ("encoding", "line", "byte"), [("utf-16", 1, 0), ("cp1252", 2, 60)], ids=["utf16", "cp1252"]
)
def test_other_encodings_name_the_line_and_byte(
    tmp_path: Path, encoding: str, line: int, byte: int
) -> None:
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    cases = tmp_path / "cases.jsonl"
    text = '{"case_id": "q1", "query": "a"}\n{"case_id": "q2", "query": "\u20ac uro"}\n'
    cases.write_bytes(text.encode(encoding))
    with pytest.raises(BenchmarkDataError) as info:
        load_benchmark(JsonlBenchmark(docs, cases), tmp_path)
    assert str(info.value).startswith(f"{cases}:{line}: not valid UTF-8 at byte {byte} ")


def test_duplicate_ids_name_both_lines(cli: InProcessCli, tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    docs = write_jsonl(tmp_path / "docs.jsonl", [*DOCS, {"document_id": "a", "text": "again"}])
    assert f"{docs}:3: document_id: duplicate 'a' (first used on line 1)" in _refused(
        cli, tmp_path, docs, cases
    )
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    cases = write_jsonl(tmp_path / "cases.jsonl", [*CASES, CASES[1]])
    assert f"{cases}:3: case_id: duplicate 'q2' (first used on line 2)" in _refused(
        cli, tmp_path, docs, cases
    )


def test_evidence_naming_missing_documents_warns_with_the_count_or_fails_when_strict(
    cli: InProcessCli, tmp_path: Path
) -> None:
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    dangling = [
        *CASES,
        {"case_id": "q3", "query": "gamma", "evidence": [{"locator": {"document_id": "gone"}}]},
        {"case_id": "q4", "query": "delta", "evidence": [{"locator": {"document_id": "lost"}}]},
    ]
    cases = write_jsonl(tmp_path / "cases.jsonl", dangling)
    done = cli(*jsonl_args(docs, cases), "tracking=none")
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "2 of 4 cases have evidence naming 2 document_id(s) the benchmark does not have" in said
    assert "q3 -> gone" in said and "runner.strict=true" in said
    assert len(read_report(report_path(done.stdout)).case_results) == 4

    strict = cli(*jsonl_args(docs, cases), "runner.strict=true", root=tmp_path / "strict")
    assert strict.returncode == 1
    assert "2 of 4 cases have evidence naming 2 document_id(s)" in strict.stderr
    assert "(runner.strict=true)" in strict.stderr
    assert nothing_written(tmp_path / "strict")


def test_beir_qrels_for_unknown_queries_and_documents_warn_with_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_jsonl(tmp_path / "corpus.jsonl", [{"_id": "d1", "title": "", "text": "kelp"}])
    write_jsonl(tmp_path / "queries.jsonl", [{"_id": "q1", "text": "kelp?"}])
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td9\t1\nghost\td1\t1\nspook\td1\t2\n"
    )
    bench = BeirBenchmark(dataset="tiny", data_root=tmp_path)

    async def cases() -> list:
        prepared = await bench.prepare(BenchmarkWorkspace(root=tmp_path / "ws"))
        return [c async for c in bench.cases(prepared)]

    with caplog.at_level(logging.WARNING, logger="heta_eval"):
        (case,) = asyncio.run(cases())
    assert case.case_id == "q1" and len(case.expected.evidence) == 2
    (record,) = caplog.records
    assert "2 qrels queries are not in queries.jsonl" in record.getMessage()
    assert "1 judgments name documents not in corpus.jsonl" in record.getMessage()


def _nested(depth: int) -> str:
    return (
        '{"document_id": "deep", "text": "x", "metadata": {"k": ' + "[" * depth + "]" * depth + "}}"
    )


def test_a_line_nested_200000_deep_is_named_not_a_traceback(
    cli: InProcessCli, tmp_path: Path
) -> None:
    docs = write_jsonl(tmp_path / "docs.jsonl", [DOCS[0], _nested(200_000)])
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES[:1])
    stderr = _refused(cli, tmp_path, docs, cases)
    assert "RecursionError" not in stderr
    assert f"{docs}:2: arrays and objects nested more than 100 levels deep" in stderr


def test_a_line_longer_than_the_bound_is_named_and_read_no_further(
    cli: InProcessCli, tmp_path: Path
) -> None:
    long = {"document_id": "long", "text": "word " * 400}  # about 2 kB
    docs = write_jsonl(tmp_path / "docs.jsonl", [DOCS[0], long])
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES[:1])
    stderr = _refused(cli, tmp_path, docs, cases, "benchmark.max_line_bytes=1000")
    assert f"{docs}:2: line longer than 1000 bytes" in stderr


@pytest.mark.parametrize("depth", [99, 101, 400])
def test_the_nesting_bound_is_exact(tmp_path: Path, depth: int) -> None:
    # The record itself is one level, its metadata a second: `depth` arrays make depth + 2.
    row = {"document_id": "d", "text": "x", "metadata": {"k": [[1]]}}
    docs = write_jsonl(tmp_path / "docs.jsonl", [json.dumps(row), _nested(depth)])
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES[:1])
    bench = JsonlBenchmark(documents=docs, cases=cases, max_nesting=depth + 2)
    documents, _, _ = load_benchmark(bench, tmp_path)
    assert [d.document_id for d in documents] == ["d", "deep"]
    tighter = JsonlBenchmark(documents=docs, cases=cases, max_nesting=depth + 1)
    with pytest.raises(BenchmarkDataError, match=rf"docs.jsonl:2: .* more than {depth + 1} "):
        load_benchmark(tighter, tmp_path)


def test_a_name_over_255_bytes_is_refused_at_parse_time(cli: InProcessCli, tmp_path: Path) -> None:
    name = "é" * 126 + ".txt"  # 130 characters, 256 bytes in UTF-8
    docs = write_jsonl(
        tmp_path / "docs.jsonl", [DOCS[0], {"document_id": "b", "name": name, "text": "b"}]
    )
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES[:1])
    stderr = _refused(cli, tmp_path, docs, cases)
    assert "Errno 36" not in stderr
    assert (
        f"{docs}:2: name: Value error, name is 256 bytes long in UTF-8; a file name may have "
        "at most 255"
    ) in stderr


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "../../escape.txt"),
        ("name", "sub/dir.txt"),
        ("name", "..\\\\win.txt"),
        ("name", ".."),
        ("document_id", "../up"),
        ("document_id", "a/b"),
    ],
)
def test_document_names_that_are_paths_are_refused_with_file_and_line(
    cli: InProcessCli, tmp_path: Path, field: str, value: str
) -> None:
    bad = {"document_id": "d2", "name": "d2.txt", "text": "two", field: value}
    docs = write_jsonl(tmp_path / "docs.jsonl", [{"document_id": "d1", "text": "one"}, bad])
    cases = write_jsonl(tmp_path / "cases.jsonl", [{"case_id": "q", "query": "one"}])
    stderr = _refused(cli, tmp_path, docs, cases)
    assert f"{docs}:2: {field}: Value error, {field} must be a bare file name" in stderr
    assert not list(tmp_path.rglob("escape.txt")) and not list(tmp_path.rglob("up"))


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
    docs = write_jsonl(tmp_path / "docs.jsonl", [DOCS[0], doc])
    cases = write_jsonl(tmp_path / "cases.jsonl", [CASES[0], case])
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
        [DOCS[0], {"document_id": "文書-ü ש", "name": name, "text": "b"}],
    )
    cases = write_jsonl(tmp_path / "cases.jsonl", [CASES[0], {"case_id": "q 2 ü", "query": "b"}])
    documents, cases_read, _ = load_benchmark(JsonlBenchmark(documents=docs, cases=cases), tmp_path)
    assert [d.name for d in documents][1] == name
    assert [c.case_id for c in cases_read] == ["q1", "q 2 ü"]
