"""The one OpenAI-compatible HTTP client and its settings, shared by every component that
calls an endpoint: the LLM judge (evaluators), the LLM answerer, the endpoint reranker and
the embeddings encoder (kb).

Importing this package needs pydantic only; httpx is imported when a request is made.
"""

from __future__ import annotations

from heta_eval.endpoints.client import (
    MAX_BACKOFF,
    RETRY_AFTER_CAP,
    EndpointError,
    MalformedResponseError,
    MissingAPIKeyError,
    OpenAICompatibleClient,
    chat_content,
    parse_retry_after,
)
from heta_eval.endpoints.settings import EndpointSettings

__all__ = [
    "MAX_BACKOFF",
    "RETRY_AFTER_CAP",
    "EndpointError",
    "EndpointSettings",
    "MalformedResponseError",
    "MissingAPIKeyError",
    "OpenAICompatibleClient",
    "chat_content",
    "parse_retry_after",
]
