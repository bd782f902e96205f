"""JsonlBenchmark reads user files, groups units, and locates bad input by file and line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from heta_eval.benchmarks import BenchmarkDataError, JsonlBenchmark, SampleBenchmark
from heta_eval.records import BenchmarkWorkspace
from tests.conftest import load_benchmark


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


_load = load_benchmark


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "notes.md").write_text("# Notes\nThe launch code is 0000.")
    docs = _write(
        tmp_path / "documents.jsonl",
        [
            {"document_id": "a", "text": "Alpha text.", "unit_id": "u1"},
            {
                "document_id": "b",
                "path": "notes.md",
                "name": "notes.md",
                "media_type": "text/markdown",
                "unit_id": "u2",
            },
            {"document_id": "shared", "text": "Shared glossary."},
        ],
    )
    cases = _write(
        tmp_path / "cases.jsonl",
        [
            {
                "case_id": "q1",
                "query": "alpha?",
                "unit_id": "u1",
                "answers": ["Alpha"],
                "evidence": [{"locator": {"document_id": "a"}}],
            },
            {"case_id": "q2", "query": "code?", "unit_id": "u2", "expected": {"answers": ["0000"]}},
        ],
    )
    return docs, cases


def test_corpus_shape_reads_inline_and_path_documents(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    docs, cases = files
    documents, case_list, units = _load(JsonlBenchmark(docs, cases), tmp_path)
    assert [d.document_id for d in documents] == ["a", "b", "shared"]
    assert documents[0].data == b"Alpha text." and documents[0].name == "a.txt"
    assert documents[1].path == (tmp_path / "notes.md").resolve()
    assert case_list[0].expected.answers == ("Alpha",)
    assert [u.unit_id for u in units] == ["corpus"] and units[0].document_ids == ()


def test_unit_shape_groups_by_unit_id_and_shares_documents_without_one(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    docs, cases = files
    _, _, units = _load(JsonlBenchmark(docs, cases, build_scope="case"), tmp_path)
    assert [(u.unit_id, u.document_ids, u.case_ids) for u in units] == [
        ("u1", ("shared", "a"), ("q1",)),
        ("u2", ("shared", "b"), ("q2",)),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"document_id": "x", "text": "ok"', r"documents.jsonl:2: invalid JSON at column"),
        ('["not", "an", "object"]', r"documents.jsonl:2: expected a JSON object, got list"),
        (
            '{"document_id": "", "text": "t"}',
            r"documents.jsonl:2: document_id: String should have at least 1 character",
        ),
        (
            '{"document_id": "x", "text": "t", "name": "../x.txt"}',
            r"documents.jsonl:2: name: Value error, name must be a bare file name",
        ),
        (
            '{"document_id": "x", "text": "t", "path": "x.txt"}',
            r"documents.jsonl:2: exactly one of text, content_base64, path and source_uri",
        ),
    ],
)
def test_malformed_document_lines_name_file_line_and_field(
    tmp_path: Path, line: str, message: str
) -> None:
    docs = _write(tmp_path / "documents.jsonl", ['{"document_id": "ok", "text": "fine"}', line])
    cases = _write(tmp_path / "cases.jsonl", [{"case_id": "q", "query": "?"}])
    with pytest.raises(BenchmarkDataError, match=message):
        _load(JsonlBenchmark(docs, cases), tmp_path)


def test_malformed_cases(tmp_path: Path) -> None:
    docs = _write(tmp_path / "documents.jsonl", [{"document_id": "d", "text": "t"}])
    bad = _write(
        tmp_path / "cases.jsonl", [{"case_id": "q", "query": "?", "answers": ["x"], "expected": {}}]
    )
    with pytest.raises(BenchmarkDataError, match=r"cases\.jsonl:1: give answers/evidence either"):
        _load(JsonlBenchmark(docs, bad), tmp_path)
    bad = _write(tmp_path / "cases.jsonl", [{"case_id": "q", "query": "?", "evidence": [{}]}])
    with pytest.raises(
        BenchmarkDataError, match=r"cases\.jsonl:1: expected\.evidence\.0: Value error, evidence"
    ):
        _load(JsonlBenchmark(docs, bad), tmp_path)
    units = _write(tmp_path / "cases.jsonl", [{"case_id": "q", "query": "?"}])
    with pytest.raises(BenchmarkDataError, match="case 'q' has no unit_id"):
        _load(JsonlBenchmark(docs, units, build_scope="case"), tmp_path)


def test_missing_files_name_the_config_key(tmp_path: Path) -> None:
    bench = JsonlBenchmark(tmp_path / "nope.jsonl", tmp_path / "cases.jsonl")
    with pytest.raises(BenchmarkDataError, match=r"benchmark\.documents: file not found"):
        asyncio.run(bench.prepare(BenchmarkWorkspace(root=tmp_path)))


def test_bundled_sample_has_both_shapes(tmp_path: Path) -> None:
    documents, cases, units = _load(SampleBenchmark(), tmp_path)
    assert len(documents) == 36 and len(cases) == 48 and len(units) == 1
    _, _, units = _load(SampleBenchmark(shape="units"), tmp_path)
    assert sorted(u.unit_id for u in units) == [
        "astronomy",
        "computing_history",
        "cooking",
        "ocean_science",
    ]
    assert all(len(u.document_ids) == 9 and len(u.case_ids) == 12 for u in units)
    names = [e.name for e in SampleBenchmark().evaluators()]
    assert names == ["evidence_recall@1", "evidence_recall@5", "ndcg@10", "context_has_answer@5"]
