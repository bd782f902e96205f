"""Bad benchmark data: errors name the file, line and field and leave no run behind; problems
that need not stop a run (an empty or unreadable document) are recorded and reported."""

from __future__ import annotations

import asyncio
import logging
import random
import tracemalloc
from pathlib import Path

import pytest

from heta_eval.benchmarks.beir import BeirBenchmark
from heta_eval.kb import FixedSizeChunker
from heta_eval.kb.chunking import _WORD, _unit_windows, _windows
from heta_eval.kb.documents import RawSource
from heta_eval.kb.parsers import PlainTextParser
from heta_eval.records import BenchmarkWorkspace

from ..conftest import CliRunner, load_benchmark
from .conftest import jsonl_args, nothing_written, read_report, report_path, write_jsonl

CASES = [
    {"case_id": "q1", "query": "alpha facts", "evidence": [{"locator": {"document_id": "a"}}]},
    {"case_id": "q2", "query": "beta facts", "evidence": [{"locator": {"document_id": "b"}}]},
]
DOCS = [
    {"document_id": "a", "text": "Alpha facts are here."},
    {"document_id": "b", "text": "Beta facts are there."},
]


def _refused(run_cli: CliRunner, tmp_path: Path, documents: Path, cases: Path) -> str:
    proc = run_cli(*jsonl_args(documents, cases))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert nothing_written(tmp_path / "outputs")
    return proc.stderr


@pytest.mark.slow
def test_malformed_json_lines_name_file_and_line(run_cli: CliRunner, tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    docs = write_jsonl(tmp_path / "docs.jsonl", [DOCS[0], '{"document_id": "b", "text": '])
    assert f"{docs}:2: invalid JSON at column" in _refused(run_cli, tmp_path, docs, cases)
    docs = write_jsonl(tmp_path / "docs.jsonl", [DOCS[0], "", '["not", "an", "object"]'])
    assert f"{docs}:3: expected a JSON object, got list" in _refused(run_cli, tmp_path, docs, cases)
    docs = write_jsonl(tmp_path / "docs.jsonl", [DOCS[0], {"text": "no id"}])
    assert f"{docs}:2: document_id: Field required" in _refused(run_cli, tmp_path, docs, cases)


def test_a_latin1_file_is_named_with_its_line_as_not_utf8(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    cases = tmp_path / "cases.jsonl"
    first = b'{"case_id": "q1", "query": "plain"}\n'
    second = '{"case_id": "q2", "query": "caf\xe9 cr\xe8me"}\n'
    cases.write_bytes(first + second.encode("latin-1"))
    stderr = _refused(run_cli, tmp_path, docs, cases)
    offset = len(first) + second.index("\xe9")
    assert f"{cases}:2: not valid UTF-8 at byte {offset} of the file" in stderr
    assert "re-encode it" in stderr


@pytest.mark.slow
def test_duplicate_ids_name_both_lines(run_cli: CliRunner, tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    docs = write_jsonl(tmp_path / "docs.jsonl", [*DOCS, {"document_id": "a", "text": "again"}])
    assert f"{docs}:3: document_id: duplicate 'a' (first used on line 1)" in _refused(
        run_cli, tmp_path, docs, cases
    )
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    cases = write_jsonl(tmp_path / "cases.jsonl", [*CASES, CASES[1]])
    assert f"{cases}:3: case_id: duplicate 'q2' (first used on line 2)" in _refused(
        run_cli, tmp_path, docs, cases
    )


@pytest.mark.slow
def test_evidence_naming_missing_documents_warns_with_the_count_or_fails_when_strict(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    dangling = [
        *CASES,
        {"case_id": "q3", "query": "gamma", "evidence": [{"locator": {"document_id": "gone"}}]},
        {"case_id": "q4", "query": "delta", "evidence": [{"locator": {"document_id": "lost"}}]},
    ]
    cases = write_jsonl(tmp_path / "cases.jsonl", dangling)
    proc = run_cli(*jsonl_args(docs, cases), "tracking=none")
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout + proc.stderr
    assert "2 of 4 cases have evidence naming 2 document_id(s) the benchmark does not have" in said
    assert "q3 -> gone" in said and "runner.strict=true" in said
    assert len(read_report(report_path(proc.stdout)).case_results) == 4

    strict = run_cli(*jsonl_args(docs, cases), "runner.strict=true", root=tmp_path / "strict")
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


def test_an_empty_document_is_reported_and_the_rest_is_scored(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    docs = write_jsonl(tmp_path / "docs.jsonl", [*DOCS, {"document_id": "blank", "text": " \n"}])
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    proc = run_cli(*jsonl_args(docs, cases), "tracking=none")
    assert proc.returncode == 0, proc.stderr
    report = read_report(report_path(proc.stdout))
    (manifest,) = report.knowledge_base_manifests
    key = "raw/benchmarks/jsonl/test/blank/blank.txt"
    assert manifest.document_errors == {key: "EmptyDocument: no text after parsing"}
    assert manifest.counts["documents"] == 2 and not report.failed_cases
    assert "1 document(s) not indexed" in proc.stdout and key in proc.stdout


@pytest.mark.slow
def test_an_unparseable_pdf_is_a_document_error_and_the_unit_goes_on(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage")
    pdf = {
        "document_id": "broken",
        "path": "broken.pdf",
        "name": "broken.pdf",
        "media_type": "application/pdf",
    }
    docs = write_jsonl(tmp_path / "docs.jsonl", [*DOCS, pdf])
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    proc = run_cli(*jsonl_args(docs, cases), "tracking=none")
    assert proc.returncode == 0, proc.stderr
    report = read_report(report_path(proc.stdout))
    (manifest,) = report.knowledge_base_manifests
    key = "raw/benchmarks/jsonl/test/broken/broken.pdf"
    assert list(manifest.document_errors) == [key]
    assert manifest.document_errors[key].startswith(f"ParseError: {key}: unreadable PDF (")
    assert manifest.counts["documents"] == 2 and len(report.case_results) == 2
    assert not report.failed_cases
    assert report.score_summary["bm25.evidence_recall@1"] == 1.0
    assert key in proc.stdout and "unreadable PDF" in proc.stdout


@pytest.mark.parametrize("words", [200, 7, 5])
def test_streaming_windows_equal_the_list_windows(words: int) -> None:
    rng = random.Random(words)
    text = " ".join("x" * rng.randint(1, 6) for _ in range(words))
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    for size in (1, 3, 5, 50):
        for overlap in {0, size // 2, size - 1}:
            expected = [(spans[a][0], spans[b][1]) for a, b in _windows(len(spans), size, overlap)]
            assert _unit_windows(_WORD, text, 0, len(text), size, overlap) == expected


def _big_text(path: Path, size: int) -> Path:
    rng = random.Random(0)
    vocabulary = [f"term{i}" for i in range(5000)]
    line = (" ".join(rng.choice(vocabulary) for _ in range(2000)) + "\n").encode()
    with path.open("wb") as handle:
        for _ in range(size // len(line)):
            handle.write(line)
    return path


@pytest.mark.parametrize(
    "megabytes", [5, pytest.param(50, marks=pytest.mark.slow)], ids=["5MB", "50MB"]
)
def test_a_huge_document_is_chunked_in_bounded_memory(tmp_path: Path, megabytes: int) -> None:
    path = _big_text(tmp_path / "big.txt", megabytes * 1_000_000)
    size = path.stat().st_size
    source = RawSource(key="raw/big.txt", document_id="big")
    tracemalloc.start()
    try:
        parsed = PlainTextParser().parse(source, path.read_bytes())
        chunks = FixedSizeChunker(chunk_size=200, chunk_overlap=20).chunk(parsed)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The bytes, the decoded text and the chunk texts (10% overlap) are each about the size
    # of the file; a word-offset list of the whole text used to make it 15 times the size.
    assert peak < 4 * size, f"peak {peak / 1e6:.0f} MB for a {size / 1e6:.0f} MB file"
    assert chunks[-1].end_char == len(parsed.text.rstrip())
    assert len(chunks) == pytest.approx(len(parsed.text.split()) / 180, rel=0.01)


@pytest.mark.parametrize(
    ("encoding", "line", "byte"), [("utf-16", 1, 0), ("cp1252", 2, 60)], ids=["utf16", "cp1252"]
)
def test_other_encodings_name_the_line_and_byte(
    tmp_path: Path, encoding: str, line: int, byte: int
) -> None:
    from heta_eval.benchmarks import BenchmarkDataError, JsonlBenchmark

    docs = write_jsonl(tmp_path / "docs.jsonl", DOCS)
    cases = tmp_path / "cases.jsonl"
    text = '{"case_id": "q1", "query": "a"}\n{"case_id": "q2", "query": "\u20ac uro"}\n'
    cases.write_bytes(text.encode(encoding))
    with pytest.raises(BenchmarkDataError) as info:
        load_benchmark(JsonlBenchmark(docs, cases), tmp_path)
    assert str(info.value).startswith(f"{cases}:{line}: not valid UTF-8 at byte {byte} ")
