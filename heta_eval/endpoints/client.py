"""A small async client for OpenAI-compatible HTTP endpoints (chat completions and friends).

It is deliberately generic: the LLM judge uses `chat()`, and answer generation or embeddings
can use `request_json()` with their own response parser. What it adds over a bare httpx call:

- bounded retries with exponential backoff and jitter on timeouts, connection errors,
  HTTP 429/5xx and malformed responses, honouring `Retry-After` on 429/503;
- a hard deadline per attempt (`timeout`), so one call never takes longer than
  `timeout * (max_retries + 1)` plus the backoff sleeps (time spent queueing for a
  concurrency slot aside);
- one `httpx.AsyncClient` and one concurrency semaphore per event loop, created lazily, so
  an object that outlives an `asyncio.run()` never uses a client bound to a closed loop;
- the API key is read from an environment variable at call time and is never stored, shown
  in a repr, logged, or put into an exception message.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self, TypeVar

from heta_eval.endpoints.settings import EndpointSettings
from heta_eval.redaction import redact

if TYPE_CHECKING:  # httpx is imported when a request is made, not with the package
    import httpx

log = logging.getLogger(__name__)

T = TypeVar("T")

RETRY_AFTER_CAP = 30.0
"""Longest `Retry-After` wait honoured, in seconds (a server asking for more gets this)."""

MAX_BACKOFF = 30.0
"""Longest exponential backoff sleep between two attempts, in seconds."""

_EXCERPT = 200


class EndpointError(RuntimeError):
    """An endpoint call that failed for good: after the last retry, or with a non-retryable error.

    Attributes: `url`, `cause` (what went wrong on the last attempt), `attempts` (how many
    were made) and `status` (the last HTTP status, None when no response was received).
    The message never contains the API key.
    """

    def __init__(
        self,
        url: str,
        cause: str,
        attempts: int,
        status: int | None = None,
        message: str | None = None,
    ) -> None:
        self.url = url
        self.cause = cause
        self.attempts = attempts
        self.status = status
        plural = "" if attempts == 1 else "s"
        super().__init__(message or f"POST {url} failed after {attempts} attempt{plural}: {cause}")


class MissingAPIKeyError(EndpointError):
    """The environment variable that should hold the API key is unset or empty (not retried)."""

    def __init__(self, url: str, variable: str) -> None:
        self.variable = variable
        cause = (
            f"environment variable {variable} is not set (it must hold the API key for this "
            "endpoint; set api_key_env to null for a server without authentication)"
        )
        super().__init__(url, cause, attempts=0, message=f"POST {url} not attempted: {cause}")


class MalformedResponseError(ValueError):
    """Raised by a response parser when a 2xx body lacks what was asked for (retried)."""


@dataclass
class _LoopState:
    """The httpx client and the concurrency bound that belong to one event loop."""

    client: httpx.AsyncClient
    semaphore: asyncio.Semaphore


def chat_content(data: Any) -> str:
    """`choices[0].message.content` of a chat completion; MalformedResponseError otherwise."""
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise MalformedResponseError("missing choices[0].message.content") from None
    if not isinstance(content, str):
        raise MalformedResponseError(
            f"choices[0].message.content is {type(content).__name__}, not a string"
        )
    return content


def parse_retry_after(value: str | None, cap: float = RETRY_AFTER_CAP) -> float | None:
    """Seconds to wait from a `Retry-After` header (seconds or HTTP date), capped at `cap`.

    None when the header is absent or unreadable.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), cap)


class OpenAICompatibleClient:
    """Async client for an OpenAI-compatible API (`{base_url}/chat/completions`, ...).

    Built from an EndpointSettings record (`from_settings`) or from the same settings as
    keyword arguments. `base_url` is the API root, e.g. `https://api.openai.com/v1` or
    `http://127.0.0.1:8000/v1`. The API key is read from the environment variable
    `api_key_env` at each call and sent as `Authorization: Bearer ...`; with
    `api_key_env=None` no Authorization header is sent (local servers). `extra_headers`
    are sent with every request and may hold secrets too: they are never shown.

    Each attempt is bounded by `timeout` seconds; failures that may pass (timeouts,
    connection errors, HTTP 429 and 5xx, malformed 2xx bodies) are retried `max_retries`
    times with exponential backoff from `backoff_seconds` plus jitter, or after the
    server's `Retry-After` on 429/503. Other 4xx are not retried. At most
    `max_concurrency` requests are in flight per event loop. Invalid settings raise
    ValueError. Constructing a client does no I/O and needs no key. Call `aclose()` (or use
    `async with`) before the event loop ends to release connections.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_seconds: float = 1.0,
        max_concurrency: int = 8,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        settings = EndpointSettings(
            base_url=base_url,
            model=model,
            api_key_env=api_key_env,
            timeout=timeout,
            max_retries=max_retries,
            backoff_seconds=backoff_seconds,
            max_concurrency=max_concurrency,
        )
        self._configure(settings, extra_headers)

    @classmethod
    def from_settings(
        cls, settings: EndpointSettings, extra_headers: Mapping[str, str] | None = None
    ) -> Self:
        """A client for the endpoint `settings` describe (validated when they were made)."""
        client = cls.__new__(cls)
        client._configure(settings, extra_headers)
        return client

    def _configure(
        self, settings: EndpointSettings, extra_headers: Mapping[str, str] | None
    ) -> None:
        self.settings = settings
        self._extra_headers = {str(k): str(v) for k, v in (extra_headers or {}).items()}
        self._states: dict[asyncio.AbstractEventLoop, _LoopState] = {}

    @property
    def base_url(self) -> str:
        """The API root, without a trailing slash."""
        return self.settings.base_url

    @property
    def model(self) -> str:
        """The model named in request bodies."""
        return self.settings.model

    @property
    def api_key_env(self) -> str | None:
        """The environment variable the API key is read from (None: no key)."""
        return self.settings.api_key_env

    @property
    def timeout(self) -> float:
        """Seconds one attempt may take."""
        return self.settings.timeout

    @property
    def max_retries(self) -> int:
        """Attempts after the first one."""
        return self.settings.max_retries

    @property
    def backoff_seconds(self) -> float:
        """The first backoff sleep (doubled on each further retry, plus jitter)."""
        return self.settings.backoff_seconds

    @property
    def max_concurrency(self) -> int:
        """Requests in flight per event loop, at most."""
        return self.settings.max_concurrency

    def __repr__(self) -> str:
        headers = f", extra_headers={sorted(self._extra_headers)}" if self._extra_headers else ""
        return (
            f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r}{headers})"
        )

    def url(self, path: str) -> str:
        """The absolute URL of an API path such as `/chat/completions`."""
        return f"{self.base_url}/{path.lstrip('/')}"

    # -- secrets ---------------------------------------------------------------------------

    def _api_key(self, url: str) -> str | None:
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            raise MissingAPIKeyError(url, self.api_key_env)
        return key

    def _redact(self, text: str, key: str | None) -> str:
        """`text` with the API key and every extra header value replaced by `***`, and any
        prefix of 8+ characters of one (a server may echo a key cut short)."""
        for secret in (key, *self._extra_headers.values()):
            if secret and len(secret) >= 4:
                text = redact(text, secret)
        return text

    # -- per-loop client -------------------------------------------------------------------

    def _state(self) -> _LoopState:
        import httpx

        loop = asyncio.get_running_loop()
        for stale in [other for other in self._states if other.is_closed()]:
            # Its connections died with the loop; nothing can be awaited on it any more.
            log.debug("dropping the HTTP client of a closed event loop for %s", self.base_url)
            del self._states[stale]
        state = self._states.get(loop)
        if state is None or state.client.is_closed:
            limits = httpx.Limits(
                max_connections=self.max_concurrency,
                max_keepalive_connections=self.max_concurrency,
            )
            state = _LoopState(
                client=httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), limits=limits),
                semaphore=asyncio.Semaphore(self.max_concurrency),
            )
            self._states[loop] = state
        return state

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (a later call opens a new one)."""
        loop = asyncio.get_running_loop()
        state = self._states.pop(loop, None)
        for stale in [other for other in self._states if other.is_closed()]:
            del self._states[stale]
        if state is not None:
            await state.client.aclose()

    async def __aenter__(self) -> OpenAICompatibleClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- requests --------------------------------------------------------------------------

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter before attempt `attempt + 1`."""
        base = min(MAX_BACKOFF, self.backoff_seconds * 2 ** (attempt - 1))
        return base * random.uniform(0.5, 1.0)

    async def request_json(
        self, path: str, body: Mapping[str, Any], parse: Callable[[Any], T]
    ) -> T:
        """POST `body` as JSON to `path` and return `parse(response JSON)`, with retries.

        `parse` raises MalformedResponseError (or KeyError/IndexError/TypeError/ValueError)
        when the body lacks what is needed; that counts as a retryable failure. Raises
        EndpointError (MissingAPIKeyError when the key variable is unset) when the call
        cannot succeed.
        """
        url = self.url(path)
        key = self._api_key(url)
        headers = {**self._extra_headers, "Accept": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        import httpx

        state = self._state()
        attempts = self.max_retries + 1
        cause, status = "no attempt made", None
        for attempt in range(1, attempts + 1):
            retry_after: float | None = None
            status = None
            log.debug("POST %s (attempt %d/%d)", url, attempt, attempts)
            try:
                async with state.semaphore:
                    async with asyncio.timeout(self.timeout):
                        response = await state.client.post(url, json=body, headers=headers)
            except (httpx.TimeoutException, TimeoutError):
                cause = f"timed out after {self.timeout:g}s"
            except httpx.RequestError as exc:
                cause = self._redact(f"{type(exc).__name__}: {exc}".rstrip(": "), key)
            else:
                status = response.status_code
                label = f"HTTP {status} {response.reason_phrase}".rstrip()
                if status == 429 or status >= 500:
                    cause = label
                    if status in (429, 503):
                        retry_after = parse_retry_after(response.headers.get("Retry-After"))
                elif status >= 300:
                    # Redacted before it is cut: a cut could leave most of a key unrecognised.
                    excerpt = self._redact(" ".join(response.text.split()), key)[:_EXCERPT]
                    raise EndpointError(
                        url, f"{label}: {excerpt}" if excerpt else label, attempt, status
                    ) from None
                else:
                    try:
                        return parse(response.json())
                    except (ValueError, KeyError, IndexError, TypeError) as exc:
                        # json.JSONDecodeError and MalformedResponseError are ValueErrors.
                        reason = exc if isinstance(exc, MalformedResponseError) else "not JSON"
                        cause = f"malformed response ({label}): {reason}"
            if attempt == attempts:
                break
            delay = retry_after if retry_after is not None else self._backoff(attempt)
            log.warning(
                "POST %s: %s (attempt %d/%d); retrying in %.2fs",
                url,
                cause,
                attempt,
                attempts,
                delay,
            )
            await asyncio.sleep(delay)
        raise EndpointError(url, cause, attempts, status)

    async def chat(self, messages: list[dict[str, Any]], **params: Any) -> str:
        """The assistant's reply to `messages` (`choices[0].message.content`).

        `params` (temperature, max_tokens, ...) are added to the request body; those that
        are None are left out, so a server's defaults apply.
        """
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        body.update({k: v for k, v in params.items() if v is not None})
        return await self.request_json("/chat/completions", body, chat_content)
