"""The streamed build (documents in batches, chunks in a file, token ids in arrays) ranks
exactly as a plain bm25s index over the same texts, whatever the batch size, and a build
cache round trip with the memory-mapped index answers the same."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import bm25s
import numpy as np
import pytest
import Stemmer
from bm25s.tokenization import Tokenizer

from heta_eval.kb import KnowledgeBase, LocalObjectStore, RawSource
from heta_eval.kb.chunk_file import ChunkFile, ChunkFileWriter
from heta_eval.kb.documents import Chunk
from heta_eval.kb.index.bm25 import split_words
from tests.conftest import load_recipe

DOCUMENTS = 400
QUERIES = 40


@pytest.fixture(scope="module")
def scifact_store(
    tmp_path_factory: pytest.TempPathFactory, scifact_dir: Path
) -> tuple[LocalObjectStore, list]:
    """The first 400 SciFact documents in an object store (one unreadable, one empty)."""
    store = LocalObjectStore(tmp_path_factory.mktemp("store"))
    sources = []
    with (scifact_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line, _ in zip(handle, range(DOCUMENTS), strict=False):
            row = json.loads(line)
            key = f"raw/benchmarks/scifact/test/{row['_id']}/{row['_id']}.txt"
            store.put(key, f"{row['title']}\n{row['text']}".encode())
            sources.append(RawSource(key=key, document_id=row["_id"]))
    store.put("raw/benchmarks/scifact/test/empty/empty.txt", b"  \n")
    sources.insert(7, RawSource(key="raw/benchmarks/scifact/test/empty/empty.txt", document_id="e"))
    sources.insert(90, RawSource(key="raw/benchmarks/scifact/test/gone/gone.txt", document_id="g"))
    return store, sources


@pytest.fixture(scope="module")
def queries(scifact_dir: Path) -> list[str]:
    with (scifact_dir / "queries.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line, _ in zip(handle, range(QUERIES), strict=False)]


def _build(store: LocalObjectStore, sources: list, batch_size: int) -> KnowledgeBase:
    # Chunks of 60 words, so documents give several chunks each and batches split mid-way.
    recipe = load_recipe(chunk_size=60, chunk_overlap=10)
    return KnowledgeBase._build(recipe, "kb", store, sources, batch_size=batch_size)


def _answers(kb: KnowledgeBase, queries: list[str]) -> list[list[tuple]]:
    responses = asyncio.run(kb.query_many(queries, mode="bm25", top_k=25))
    return [
        [(r.id, r.score, r.text, r.source.model_dump()) for r in response.results]
        for response in responses
    ]


def test_streamed_build_equals_a_plain_bm25s_index_over_the_same_texts(
    scifact_store: tuple[LocalObjectStore, list], queries: list[str]
) -> None:
    store, sources = scifact_store
    kb = _build(store, sources, batch_size=16)
    chunks = kb._chunks
    assert isinstance(chunks, ChunkFile) and len(chunks) > DOCUMENTS  # several chunks a doc

    # The floor's way: every text tokenised at once, then bm25s's index.
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    tokenizer = Tokenizer(stemmer=Stemmer.Stemmer("english"), stopwords="en", splitter=split_words)
    texts = [chunk.text for chunk in chunks]
    plain = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    plain.index(
        tokenizer.tokenize(texts, update_vocab=True, return_as="tuple", show_progress=False)
    )

    streamed = kb._indexes["bm25"]._retriever  # type: ignore[attr-defined]
    assert streamed.vocab_dict == plain.vocab_dict
    for name in ("data", "indices", "indptr"):
        assert np.array_equal(streamed.scores[name], plain.scores[name]), name
        assert streamed.scores[name].dtype == plain.scores[name].dtype
    ids = tokenizer.tokenize(queries, update_vocab=False, return_as="ids", show_progress=False)
    positions, scores = plain.retrieve(ids, k=25, show_progress=False)
    for answer, row_p, row_s in zip(_answers(kb, queries), positions, scores, strict=True):
        expected = [
            (chunks[int(p)].chunk_id, float(s)) for p, s in zip(row_p, row_s, strict=True) if s > 0
        ]
        assert [(a[0], a[1]) for a in answer] == expected


def test_batch_size_changes_nothing_a_query_or_the_manifest_sees(
    scifact_store: tuple[LocalObjectStore, list], queries: list[str]
) -> None:
    store, sources = scifact_store
    one_by_one, all_at_once = _build(store, sources, 1), _build(store, sources, 10_000)
    assert _answers(one_by_one, queries) == _answers(all_at_once, queries)
    first, second = one_by_one.manifest(), all_at_once.manifest()
    assert (
        first.counts
        == second.counts
        == {
            "sources": DOCUMENTS + 2,
            "documents": DOCUMENTS,
            "chunks": len(all_at_once._chunks),
            "document_errors": 2,
        }
    )
    assert first.document_errors == second.document_errors
    assert set(first.document_errors) == {
        "raw/benchmarks/scifact/test/empty/empty.txt",
        "raw/benchmarks/scifact/test/gone/gone.txt",
    }
    assert [(s.name, s.counts) for s in first.steps] == [(s.name, s.counts) for s in second.steps]
    assert list(one_by_one._chunks) == list(all_at_once._chunks)


def test_cache_round_trip_memory_maps_the_index_and_answers_the_same(
    tmp_path: Path, scifact_store: tuple[LocalObjectStore, list], queries: list[str]
) -> None:
    store, sources = scifact_store
    built = _build(store, sources, 64)
    built.save(tmp_path / "entry")
    loaded = KnowledgeBase.load(
        tmp_path / "entry", recipe=load_recipe(chunk_size=60, chunk_overlap=10), name="again"
    )
    scores = loaded._indexes["bm25"]._retriever.scores  # type: ignore[attr-defined]
    assert all(isinstance(scores[name], np.memmap) for name in ("data", "indices", "indptr"))
    assert _answers(loaded, queries) == _answers(built, queries)
    assert loaded.manifest().counts == built.manifest().counts
    # The saved chunks file is what a list of chunks would have written, line for line.
    lines = (tmp_path / "entry" / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines == [chunk.model_dump_json() for chunk in built._chunks]


def test_chunk_file_reads_chunks_by_position_and_skips_blank_lines(tmp_path: Path) -> None:
    chunks = [
        Chunk(
            chunk_id=f"d{i}#0",
            chunk_index=0,
            document_id=f"d{i}",
            source_key=f"raw/d{i}.txt",
            text=f"text {i} \u00e9\n" * i,
            start_char=0,
            end_char=8 * i,
            locator={"page_index": i} if i % 2 else {},
        )
        for i in range(7)
    ]
    writer = ChunkFileWriter(tmp_path)
    writer.add(chunks[:3])
    writer.add([])
    writer.add(chunks[3:])
    written = writer.finish()
    assert len(written) == 7 and list(written) == chunks
    assert [written[i] for i in (6, 0, 3, -1)] == [chunks[6], chunks[0], chunks[3], chunks[6]]
    assert written[2:5] == chunks[2:5]
    with pytest.raises(IndexError, match="chunk position 7 out of range"):
        written[7]
    path = tmp_path / "chunks.jsonl"
    written.copy_to(path)
    assert path.read_text(encoding="utf-8") == "".join(c.model_dump_json() + "\n" for c in chunks)
    written.close()
    with path.open("a", encoding="utf-8") as handle:  # a blank line and a last line without "\n"
        handle.write("\n" + chunks[1].model_dump_json())
    reopened = ChunkFile.open(path)
    assert list(reopened) == [*chunks, chunks[1]] and reopened[7] == chunks[1]
    reopened.close()


def test_a_chunk_file_that_cannot_be_made_names_its_directory(tmp_path: Path) -> None:
    with pytest.raises(OSError, match=r"missing \(the build's temporary chunk file; TMPDIR"):
        ChunkFileWriter(tmp_path / "missing")
