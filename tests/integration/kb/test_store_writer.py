"""The object store's writer process: what it writes equals what `LocalObjectStore.put`
writes, a failure names the file with its errno, and a runner with many documents writes
them through it while the knowledge base is built from the same bytes."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest

from heta_eval import BenchmarkRunner, RunnerSettings
from heta_eval.benchmarks import JsonlBenchmark
from heta_eval.kb import LocalObjectStore
from heta_eval.kb.store import InvalidKeyError
from heta_eval.kb.store_writer import BackgroundStoreWriter, StoreWriteError
from heta_eval.run.documents import BACKGROUND_WRITES_MIN_DOCUMENTS

from ...conftest import load_recipe
from ...reliability.conftest import write_jsonl


def _objects(count: int) -> dict[str, bytes]:
    return {
        f"raw/benchmarks/b/test/d{i}/d{i}.txt": os.urandom(i % 700) + f"document {i}".encode()
        for i in range(count)
    }


def test_written_objects_equal_the_bytes_and_a_second_writer_leaves_them(
    tmp_path: Path,
) -> None:
    objects = _objects(600)
    objects["raw/benchmarks/b/test/big/big.bin"] = os.urandom(9 << 20)  # several batches
    with BackgroundStoreWriter(tmp_path / "store") as writer:
        for key, data in objects.items():
            writer.put(key, data)
        written, seconds = writer.finish()
    assert written == len(objects) and seconds > 0
    store = LocalObjectStore(tmp_path / "store")
    assert sorted(store.list()) == sorted(objects)
    assert all(store.get(key) == data for key, data in objects.items())
    first = store.path_of("raw/benchmarks/b/test/d1/d1.txt").stat().st_mtime_ns

    with BackgroundStoreWriter(tmp_path / "store") as writer:
        for key, data in objects.items():
            writer.put(key, data)
        assert writer.finish()[0] == len(objects)
    assert store.path_of("raw/benchmarks/b/test/d1/d1.txt").stat().st_mtime_ns == first
    assert not [p for p in (tmp_path / "store").rglob("*.tmp")]


def test_an_invalid_key_is_refused_before_it_reaches_the_process(tmp_path: Path) -> None:
    with BackgroundStoreWriter(tmp_path) as writer:
        with pytest.raises(InvalidKeyError, match=r"\.\."):
            writer.put("raw/../escape.txt", b"x")
        assert writer.finish()[0] == 0
    assert not (tmp_path.parent / "escape.txt").exists()


def test_a_failed_put_names_the_file_and_its_errno(tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "taken").write_bytes(b"a file where a directory should be")
    with BackgroundStoreWriter(tmp_path) as writer:
        writer.put("raw/first/first.txt", b"one")
        writer.put("raw/taken/doc.txt", b"two")
        writer.put("raw/later/later.txt", b"three")
        with pytest.raises(StoreWriteError) as caught:
            writer.finish()
    assert caught.value.errno == errno.ENOTDIR
    assert caught.value.filename == str(tmp_path / "raw" / "taken" / "doc.txt")
    assert (tmp_path / "raw" / "first" / "first.txt").read_bytes() == b"one"
    assert not (tmp_path / "raw" / "later").exists()  # it stops at the first failure


def test_a_writer_that_dies_is_an_error_not_a_silent_loss(tmp_path: Path) -> None:
    writer = BackgroundStoreWriter(tmp_path)
    writer._process.kill()  # the process dies under a run
    writer.put("raw/a/a.txt", b"a")
    with pytest.raises(StoreWriteError, match="ended with exit code -9 before reporting"):
        writer.finish()
    writer.close()


def test_a_runner_with_many_documents_writes_them_in_the_background(tmp_path: Path) -> None:
    count = BACKGROUND_WRITES_MIN_DOCUMENTS + 44
    documents = [
        {"document_id": f"d{i}", "text": f"river doc{i} flows past town {i % 7} and meets the sea"}
        for i in range(count)
    ]
    cases = [
        {"case_id": f"q{i}", "query": f"river doc{i}", "evidence": [{"reference_id": f"d{i}"}]}
        for i in range(0, count, 30)
    ]
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "documents.jsonl", documents)
    write_jsonl(data / "cases.jsonl", cases)
    bench = JsonlBenchmark(data / "documents.jsonl", data / "cases.jsonl", name="rivers")
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=load_recipe(),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(output_dir=tmp_path / "run", store_dir=tmp_path / "store"),
    )
    report = asyncio.run(runner.run())
    timings = report.run.timings_seconds
    assert timings["write_documents_in_background"] > 0
    assert not report.failed_cases
    assert report.score_summary["bm25.evidence_recall@5"] == 1.0
    store = LocalObjectStore(tmp_path / "store")
    assert report.run.document_keys.stored == count
    keys = {d["document_id"]: report.run.document_key(d["document_id"]) for d in documents}
    assert sorted(store.list("raw/")) == sorted(keys.values())
    text = {d["document_id"]: d["text"] for d in documents}
    assert all(store.get(key).decode() == text[doc] for doc, key in keys.items())
    # The knowledge base was built from every document, from the bytes in memory.
    manifest = report.knowledge_base_manifests[0]
    # Its sources are the stored documents, in order: the report does not list their keys.
    assert not manifest.sources_listed and manifest.source_keys == ()
    assert manifest.counts["documents"] == count
