"""Rerankers: reorder a query's top results with a stronger relevance model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from heta_eval.config.ranges import BATCH_SIZE_RANGE, TOP_K_RANGE, BatchSize, TopK
from heta_eval.endpoints import EndpointSettings, OpenAICompatibleClient
from heta_eval.records import QueryResult


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, result) pairs and returns the results best first; `aclose` releases
    what it holds (an endpoint's connections) when its knowledge base is closed."""

    async def rerank(self, query: str, results: Sequence[QueryResult]) -> list[QueryResult]: ...

    async def aclose(self) -> None: ...


class BaseReranker:
    """Base class of rerankers: holds nothing to release. A subclass implements `rerank`."""

    async def aclose(self) -> None:
        """Nothing to release."""


def _reordered(results: Sequence[QueryResult], scores: Sequence[float]) -> list[QueryResult]:
    head = [r.model_copy(update={"score": float(s)}) for r, s in zip(results, scores, strict=True)]
    # Stable: equal scores keep the first stage's order.
    head.sort(key=lambda r: -r.score)
    return head


class CrossEncoderReranker(BaseReranker):
    """A sentence-transformers CrossEncoder over the top `top_n` results (a local model path
    or a hub id; hub ids need network). The rest of the ranking is dropped: results beyond
    `top_n` were not scored by the same model and cannot be ranked against the others."""

    def __init__(
        self, model: str, top_n: TopK = 50, batch_size: BatchSize = 32, device: str = "cpu"
    ):
        TOP_K_RANGE.check("top_n", top_n)
        BATCH_SIZE_RANGE.check("batch_size", batch_size)
        self.model_name = model
        self.top_n = top_n
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import CrossEncoder
            except ImportError as exc:
                raise ImportError(
                    "CrossEncoderReranker needs sentence-transformers: "
                    "pip install 'heta-eval[dense]'"
                ) from exc
            self._model = CrossEncoder(self.model_name, device=self.device)
        return self._model

    async def rerank(self, query: str, results: Sequence[QueryResult]) -> list[QueryResult]:
        head = list(results[: self.top_n])
        if not head:
            return []
        scores = self._load().predict(
            [(query, r.text) for r in head], batch_size=self.batch_size, show_progress_bar=False
        )
        return _reordered(head, list(scores))


class EndpointReranker(BaseReranker):
    """The top `top_n` results reordered by any rerank endpoint of the common `/rerank`
    shape (Cohere, Jina, Infinity, TEI): request `{model, query, documents, top_n}`,
    response `{results: [{index, relevance_score}]}`. Retries and key handling come from
    the OpenAI-compatible client; the key is read from `api_key_env` at call time and never
    logged."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "RERANK_API_KEY",
        top_n: TopK = 50,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_seconds: float = 1.0,
        max_concurrency: int = 8,
    ) -> None:
        TOP_K_RANGE.check("top_n", top_n)
        self.top_n = top_n
        self.client = OpenAICompatibleClient.from_settings(
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

    def __repr__(self) -> str:
        return f"EndpointReranker({self.client!r})"

    async def rerank(self, query: str, results: Sequence[QueryResult]) -> list[QueryResult]:
        head = list(results[: self.top_n])
        if not head:
            return []
        body = {
            "model": self.client.model,
            "query": query,
            "documents": [r.text for r in head],
            "top_n": len(head),
        }

        def parse(data: Any) -> list[float]:
            scores = [0.0] * len(head)
            seen = set()
            for item in data["results"]:
                index = int(item["index"])
                scores[index] = float(item["relevance_score"])
                seen.add(index)
            if seen != set(range(len(head))):
                raise ValueError(f"rerank scores for {len(seen)} of {len(head)} documents")
            return scores

        scores = await self.client.request_json("/rerank", body, parse)
        return _reordered(head, scores)

    async def aclose(self) -> None:
        """Release the endpoint's connections."""
        await self.client.aclose()
