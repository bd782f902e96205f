"""The BEIR adapter: official layout, verified download of the zip, conventions, bad files."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import zipfile
from pathlib import Path

import pytest

from heta_eval import BenchmarkRunner, RunnerSettings
from heta_eval.benchmarks import BeirBenchmark, BenchmarkDataError
from heta_eval.benchmarks.download import ChecksumMismatchError
from heta_eval.records import BenchmarkWorkspace
from tests.conftest import load_benchmark, load_recipe
from tests.http_fixtures import serve_files

_load = load_benchmark


def _dataset(root: Path, qrels: str, corpus: list[dict] | None = None) -> Path:
    (root / "qrels").mkdir(parents=True)
    corpus = corpus or [
        {"_id": "d1", "title": "Kelp", "text": "Kelp forests shelter otters."},
        {"_id": "d2", "title": "", "text": "Coral reefs bleach in warm water."},
        {"_id": "q2", "title": "Same id as a query", "text": "warm water otters"},
    ]
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    queries = [
        {"_id": "q1", "text": "what shelters otters"},
        {"_id": "q2", "text": "why do reefs bleach in warm water"},
        {"_id": "q3", "text": "unjudged query"},
    ]
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (root / "qrels" / "test.tsv").write_bytes(qrels.encode())
    return root


QRELS = "\r\n".join(
    [
        "query-id\tcorpus-id\tscore",
        "q1\td1\t2",
        "q1\td2\t0",
        "q2\td2\t1",
        "q9\td1\t1",
        "q2\tmissing\t1",
        "",
    ]
)


def test_documents_cases_and_conventions(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = _dataset(tmp_path / "tiny", QRELS)
    with caplog.at_level(logging.WARNING):
        documents, cases, units = _load(BeirBenchmark("tiny", data_root=root), tmp_path)
    assert [d.document_id for d in documents] == ["d1", "d2", "q2"]
    assert documents[0].data == b"Kelp\nKelp forests shelter otters."
    assert documents[1].data == b"Coral reefs bleach in warm water."
    # Only judged queries are cases; every judgment is evidence with its grade.
    assert [c.case_id for c in cases] == ["q1", "q2"]
    relevant, judged_not = cases[0].expected.evidence
    assert relevant.locator == {"document_id": "d1"} and relevant.metadata == {"relevance": 2}
    assert judged_not.locator == {"document_id": "d2"} and judged_not.metadata == {"relevance": 0}
    assert [u.unit_id for u in units] == ["corpus"]
    assert "1 qrels queries are not in queries.jsonl and 1 judgments name documents" in caplog.text


def test_cases_before_documents_still_find_the_unknown_documents(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bench = BeirBenchmark("tiny", data_root=_dataset(tmp_path / "tiny", QRELS))

    async def cases_first() -> list:
        prepared = await bench.prepare(BenchmarkWorkspace(root=tmp_path, offline=True))
        return [c async for c in bench.cases(prepared)]

    with caplog.at_level(logging.WARNING):
        cases = asyncio.run(cases_first())
    assert [c.case_id for c in cases] == ["q1", "q2"]
    assert "and 1 judgments name documents not in corpus.jsonl" in caplog.text


def test_identical_ids_are_ignored_as_beir_does(tmp_path: Path) -> None:
    root = _dataset(tmp_path / "tiny", QRELS)
    bench = BeirBenchmark("tiny", data_root=root)
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=load_recipe(),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(output_dir=tmp_path / "run", store_dir=tmp_path / "store"),
    )
    report = asyncio.run(runner.run())
    q2 = next(r for r in report.case_results if r.case_id == "q2")
    # Document q2 (the query's own id) is dropped before scoring: d2 counts as rank 1.
    assert "q2" not in [item.document_id for item in q2.retrieved]
    assert q2.score("mrr@10") == 1.0
    kept = BeirBenchmark("tiny", data_root=root, ignore_identical_ids=False).evaluators()
    assert not any(getattr(e, "ignore_identical_ids", True) for e in kept)


@pytest.mark.parametrize(
    ("qrels", "message"),
    [
        ("query-id\tcorpus-id\tscore\nq1\td1\n", r"test\.tsv:2: expected 3 tab-separated fields"),
        ("query-id\tcorpus-id\tscore\nq1\td1\thigh\n", r"test\.tsv:2: score must be an integer"),
    ],
)
def test_malformed_qrels_name_file_and_line(tmp_path: Path, qrels: str, message: str) -> None:
    root = _dataset(tmp_path / "tiny", qrels)
    with pytest.raises(BenchmarkDataError, match=message):
        _load(BeirBenchmark("tiny", data_root=root), tmp_path)


def test_malformed_corpus_and_missing_files(tmp_path: Path) -> None:
    root = _dataset(
        tmp_path / "bad", QRELS, corpus=[{"_id": "d1", "text": "ok"}, {"text": "no id"}]
    )
    with pytest.raises(BenchmarkDataError, match=r"corpus\.jsonl:2: _id: expected a non-empty"):
        _load(BeirBenchmark("bad", data_root=root), tmp_path)
    with pytest.raises(
        BenchmarkDataError, match=r"benchmark\.data_root: .*qrels/dev\.tsv not found"
    ):
        _load(BeirBenchmark("bad", split="dev", data_root=root), tmp_path)


def _scifact_zip(scifact_dir: Path, tamper: bool = False) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for member in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
            data = (scifact_dir / member).read_bytes()
            if tamper and member == "queries.jsonl":
                data = data.replace(b"biomaterials", b"biomaterial", 1)
            archive.writestr(f"scifact/{member}", data)
    return buffer.getvalue()


def test_download_extract_and_verify_members(scifact_dir: Path, tmp_path: Path) -> None:
    with serve_files({"/beir/scifact.zip": _scifact_zip(scifact_dir)}) as server:
        bench = BeirBenchmark(base_url=server.url("/beir"), cache_dir=tmp_path / "cache")
        prepared = asyncio.run(bench.prepare(BenchmarkWorkspace(root=tmp_path)))
        assert prepared.paths["corpus"].read_bytes() == (scifact_dir / "corpus.jsonl").read_bytes()
        assert str(prepared.root).startswith(str(tmp_path / "cache" / "beir"))
        again = BeirBenchmark(base_url=server.url("/beir"), cache_dir=tmp_path / "cache")
        asyncio.run(again.prepare(BenchmarkWorkspace(root=tmp_path)))
        assert len(server.requests) == 1  # the cached, verified zip is reused


def test_a_tampered_member_is_refused(scifact_dir: Path, tmp_path: Path) -> None:
    with serve_files({"/scifact.zip": _scifact_zip(scifact_dir, tamper=True)}) as server:
        bench = BeirBenchmark(base_url=server.base_url, cache_dir=tmp_path / "cache")
        with pytest.raises(
            ChecksumMismatchError, match=r"queries\.jsonl: expected sha256 8ff84a7c"
        ):
            asyncio.run(bench.prepare(BenchmarkWorkspace(root=tmp_path)))


def test_offline_without_local_files_says_what_to_do(tmp_path: Path) -> None:
    bench = BeirBenchmark(cache_dir=tmp_path / "cache")
    with pytest.raises(Exception, match=r"benchmark\.data_root"):
        asyncio.run(bench.prepare(BenchmarkWorkspace(root=tmp_path, offline=True)))
