"""Dense retrieval: chunk embeddings searched by cosine similarity (exact, or HNSW when large).

Importing this module (and constructing its classes, as recipe validation does) needs only
numpy: hnswlib is imported when an approximate index is built or loaded, and the encoders'
libraries when they first encode (see `heta_eval.kb.index.encoders`). Install them with
`pip install 'heta-eval[dense]'`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from heta_eval.config.components import instantiate
from heta_eval.config.ranges import BATCH_SIZE_RANGE, BatchSize
from heta_eval.kb.documents import Chunk
from heta_eval.kb.index.base import BaseIndexBuilder, BaseSearchIndex, Hits
from heta_eval.kb.index.embedding_cache import EmbeddingCache
from heta_eval.kb.index.encoders import Encoder, missing_dependency
from heta_eval.kb.index.ray_encoding import encode_on_ray, ray_settings

log = logging.getLogger(__name__)

_ANN_DEFAULTS = {"M": 16, "ef_construction": 200, "ef": 200, "seed": 100}


def _normalised(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32, copy=False)


class DenseIndex(BaseIndexBuilder):
    """Builds a dense index: chunk texts embedded by `encoder`, searched by cosine similarity.

    `encoder` is a `_target_` spec (or an encoder object). Up to `exact_max` chunks are
    searched exactly (one matrix product); above that an HNSW graph (hnswlib, cosine space)
    with `ann` settings M, ef_construction, ef and seed. `normalize` scales vectors to unit
    length, so that the exact search is cosine (off: inner product). Document embeddings are
    cached under `cache_dir` (None: `{runner.cache_dir}/embeddings` during a run, else
    `$HETA_EVAL_CACHE/embeddings`; "" or False: no cache).
    `ray` (`RayEncoding` settings: actors, num_cpus, num_gpus, batch_size, address) encodes
    the documents on Ray Data with a pool of encoder actors instead of in this process
    (queries are always encoded here); None: here.
    """

    def __init__(
        self,
        encoder: Mapping[str, Any] | Encoder,
        exact_max: int = 20000,
        ann: Mapping[str, Any] | None = None,
        batch_size: BatchSize = 64,
        normalize: bool = True,
        cache_dir: str | None = None,
        ray: Mapping[str, Any] | None = None,
    ) -> None:
        if exact_max < 0:
            raise ValueError(f"exact_max must be >= 0, got {exact_max}")
        BATCH_SIZE_RANGE.check("batch_size", batch_size)
        unknown = sorted(set(ann or {}) - set(_ANN_DEFAULTS))
        if unknown:
            raise ValueError(f"unknown ann settings {unknown}; known: {sorted(_ANN_DEFAULTS)}")
        self._encoder_spec = encoder
        self._encoder: Encoder | None = None if isinstance(encoder, Mapping) else encoder
        self.exact_max = exact_max
        self.ann = {**_ANN_DEFAULTS, **(ann or {})}
        self.batch_size = batch_size
        self.normalize = normalize
        self.cache = None if cache_dir is False or cache_dir == "" else EmbeddingCache(cache_dir)
        self.ray = ray_settings(ray)

    @property
    def encoder(self) -> Encoder:
        """The encoder, created from its spec on first use."""
        if self._encoder is None:
            self._encoder = instantiate(self._encoder_spec)  # type: ignore[arg-type]
        return self._encoder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Document embeddings of `texts` (from the cache when the same texts were seen)."""
        key = None
        if self.cache is not None and texts:
            key = EmbeddingCache.key(self.encoder.identity(), texts)
            cached = self.cache.get(key, len(texts))
            if cached is not None:
                log.info("dense: %d embeddings from the cache", len(texts))
                return cached
        if self.ray is not None and texts:
            matrix = encode_on_ray(self.encoder, texts, self.ray, self.batch_size)
        else:
            matrix = self.encoder.encode_documents(list(texts), self.batch_size)
        if key is not None and self.cache is not None:
            self.cache.put(key, matrix)
        return matrix

    def build(self, chunks: Sequence[Chunk]) -> BuiltDenseIndex:
        """Embed and index `chunks`; positions in the result refer to this sequence."""
        matrix = self.embed([c.text for c in chunks])
        if self.normalize and len(matrix):
            matrix = _normalised(matrix)
        return BuiltDenseIndex(self, matrix, [c.chunk_id for c in chunks])

    def load(self, directory: Path) -> BuiltDenseIndex:
        """An index saved by `BuiltDenseIndex.save`, searched with this builder's encoder."""
        matrix = np.load(directory / "embeddings.npy", allow_pickle=False)
        ids = json.loads((directory / "ids.json").read_text(encoding="utf-8"))
        graph = directory / "hnsw.bin"
        return BuiltDenseIndex(self, matrix, ids, graph_file=graph if graph.is_file() else None)


class BuiltDenseIndex(BaseSearchIndex):
    """A queryable dense index: every chunk is a candidate (scores are cosine similarities)."""

    persistent = True

    def __init__(
        self,
        builder: DenseIndex,
        matrix: np.ndarray,
        ids: Sequence[str],
        graph_file: Path | None = None,
    ) -> None:
        if len(matrix) != len(ids):
            raise ValueError(f"{len(matrix)} embeddings for {len(ids)} chunk ids")
        self._builder = builder
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.ids = list(ids)
        self.size = len(ids)
        self._graph = None
        if self.approximate:
            self._graph = self._load_graph(graph_file) if graph_file else self._build_graph()

    @property
    def approximate(self) -> bool:
        """Whether searches go through the HNSW graph (more chunks than `exact_max`)."""
        return self.size > self._builder.exact_max

    def _hnswlib(self) -> Any:
        try:
            import hnswlib
        except ImportError as exc:
            raise missing_dependency("approximate dense search", exc) from exc
        return hnswlib

    def _space(self) -> str:
        return "cosine" if self._builder.normalize else "ip"

    def _build_graph(self) -> Any:
        ann = self._builder.ann
        graph = self._hnswlib().Index(space=self._space(), dim=self.matrix.shape[1])
        graph.init_index(
            max_elements=self.size,
            M=int(ann["M"]),
            ef_construction=int(ann["ef_construction"]),
            random_seed=int(ann["seed"]),
        )
        # One thread: the graph (and so the results) depends on insertion order only.
        graph.add_items(self.matrix, np.arange(self.size), num_threads=1)
        graph.set_ef(int(ann["ef"]))
        return graph

    def _load_graph(self, path: Path) -> Any:
        graph = self._hnswlib().Index(space=self._space(), dim=self.matrix.shape[1])
        graph.load_index(str(path), max_elements=self.size)
        graph.set_ef(int(self._builder.ann["ef"]))
        return graph

    def save(self, directory: Path) -> None:
        """Write embeddings (.npy), chunk ids and the HNSW graph, if any, into `directory`."""
        directory.mkdir(parents=True, exist_ok=True)
        np.save(directory / "embeddings.npy", self.matrix, allow_pickle=False)
        (directory / "ids.json").write_text(json.dumps(self.ids), encoding="utf-8")
        if self._graph is not None:
            self._graph.save_index(str(directory / "hnsw.bin"))

    def _queries(self, queries: Sequence[str]) -> np.ndarray:
        vectors = self._builder.encoder.encode_queries(list(queries), self._builder.batch_size)
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape[1] != self.matrix.shape[1]:
            raise ValueError(
                f"query vectors have {vectors.shape[1]} dimensions, the index "
                f"{self.matrix.shape[1]}: was it built with another encoder?"
            )
        return _normalised(vectors) if self._builder.normalize else vectors

    def search(self, queries: Sequence[str], top_k: int) -> list[Hits]:
        if not queries or self.size == 0:
            return [[] for _ in queries]
        vectors = self._queries(queries)
        k = min(top_k, self.size)
        if self._graph is not None:
            ef = max(int(self._builder.ann["ef"]), k)
            self._graph.set_ef(ef)
            labels, distances = self._graph.knn_query(vectors, k=k, num_threads=1)
            # hnswlib distances: 1 - cos (cosine) or 1 - dot (ip); report similarities.
            return [
                [(int(p), float(1.0 - d)) for p, d in zip(row_p, row_d, strict=True)]
                for row_p, row_d in zip(labels, distances, strict=True)
            ]
        scores = vectors @ self.matrix.T
        results = []
        for row in scores:
            top = np.argpartition(-row, k - 1)[:k] if k < self.size else np.arange(self.size)
            # Highest score first; ties keep corpus order (stable sort on the position).
            order = top[np.lexsort((top, -row[top]))]
            results.append([(int(p), float(row[p])) for p in order])
        return results
