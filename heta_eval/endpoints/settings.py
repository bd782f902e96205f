"""EndpointSettings: where an OpenAI-compatible endpoint is and how patiently it is called.

The LLM judge, the LLM answerer, the endpoint reranker and the embeddings encoder take these
settings as flat constructor arguments (their config keys); each builds one record from them
and its client from the record. The record holds the *name* of the environment variable
with the API key, never the key: its repr and dumps are safe to log and to hash.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError, field_validator

from heta_eval.records._base import Record

# Upper bounds: beyond them a call waits, retries or floods without purpose. (Ranges elsewhere
# are `heta_eval.config.ranges`; this package sits beside config and shares no code with it.)
MAX_TIMEOUT_SECONDS = 86_400.0
MAX_RETRIES = 100
MAX_BACKOFF_SECONDS = 3_600.0
MAX_CONCURRENCY = 10_000


class EndpointSettings(Record):
    """Where an OpenAI-compatible API is and how calls to it are bounded and retried.

    `base_url` is the API root (`https://api.openai.com/v1`, `http://127.0.0.1:8000/v1`),
    kept without a trailing slash. The API key is read from the environment variable
    `api_key_env` at each call (None: no Authorization header). Each attempt is bounded by
    `timeout` seconds; failures that may pass are retried `max_retries` times with
    exponential backoff from `backoff_seconds`; at most `max_concurrency` requests are in
    flight per event loop.

    Invalid settings raise ValueError with the message of the first invalid field. Extra
    request headers, which may hold secrets, are given to the client, not kept here.
    """

    base_url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_retries: int = 4
    backoff_seconds: float = 1.0
    max_concurrency: int = 8

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            # The message a caller (and a config error) shows: the field's own, on one line.
            first = exc.errors()[0]
            error = first.get("ctx", {}).get("error")
            field = ".".join(str(part) for part in first["loc"])
            message = str(error) if error is not None else f"{field}: {first['msg']}"
            raise ValueError(message) from None

    @field_validator("base_url", mode="before")
    @classmethod
    def _base_url(cls, value: Any) -> str:
        if not isinstance(value, str) or not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {value!r}")
        return value.rstrip("/")

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("model must be a non-empty string")
        return value

    @field_validator("api_key_env", mode="before")
    @classmethod
    def _api_key_env(cls, value: Any) -> str | None:
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError("api_key_env must be the name of an environment variable, or None")
        return value

    @field_validator("timeout")
    @classmethod
    def _timeout(cls, value: float) -> float:
        if not 0 < value <= MAX_TIMEOUT_SECONDS:
            raise ValueError(
                f"timeout must be > 0 seconds and at most {MAX_TIMEOUT_SECONDS:.0f}, got {value}"
            )
        return value

    @field_validator("max_retries")
    @classmethod
    def _max_retries(cls, value: int) -> int:
        if not 0 <= value <= MAX_RETRIES:
            raise ValueError(f"max_retries must be >= 0 and at most {MAX_RETRIES}, got {value}")
        return value

    @field_validator("backoff_seconds")
    @classmethod
    def _backoff_seconds(cls, value: float) -> float:
        if not 0 <= value <= MAX_BACKOFF_SECONDS:
            raise ValueError(
                f"backoff_seconds must be >= 0 and at most {MAX_BACKOFF_SECONDS:.0f}, got {value}"
            )
        return value

    @field_validator("max_concurrency")
    @classmethod
    def _max_concurrency(cls, value: int) -> int:
        if not 1 <= value <= MAX_CONCURRENCY:
            raise ValueError(
                f"max_concurrency must be >= 1 and at most {MAX_CONCURRENCY}, got {value}"
            )
        return value
