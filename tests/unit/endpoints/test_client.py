"""The OpenAI-compatible client against a real local server: its errors name the URL, the
status and the attempts; each event loop gets its own HTTP client; Retry-After is read."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from heta_eval.endpoints import EndpointError, OpenAICompatibleClient, parse_retry_after
from tests.openai_server import ChatServer, Reply, serve_chat


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with serve_chat() as state:
        yield state


def test_client_errors_name_url_status_and_attempts(server: ChatServer) -> None:
    server.replies += [Reply(502, "bad gateway") for _ in range(3)]
    client = OpenAICompatibleClient(
        server.base_url, "m", api_key_env=None, max_retries=2, backoff_seconds=0.01
    )

    async def go() -> None:
        # No aclose(): the client of this loop is left behind when asyncio.run() ends.
        with pytest.raises(EndpointError) as info:
            await client.chat([{"role": "user", "content": "hi"}])
        assert info.value.status == 502 and info.value.attempts == 3
        assert str(info.value).startswith(f"POST {server.base_url}/chat/completions failed")
        assert "HTTP 502" in str(info.value) and "3 attempts" in str(info.value)

    asyncio.run(go())
    # A later event loop gets its own HTTP client.
    asyncio.run(go_twice(client))
    assert server.count == 5
    assert parse_retry_after("2.5") == 2.5 and parse_retry_after("600") == 30.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


async def go_twice(client: OpenAICompatibleClient) -> None:
    try:
        assert (
            await client.chat([{"role": "user", "content": "Expected: a\nAnswer: a"}]) == "CORRECT"
        )
        assert await client.chat([{"role": "user", "content": "Answer: b"}]) == "INCORRECT"
    finally:
        await client.aclose()
