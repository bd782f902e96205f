"""EndpointSettings: one validated record per endpoint user, never holding the API key."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from heta_eval.endpoints import EndpointSettings, OpenAICompatibleClient
from heta_eval.evaluators import LLMJudge
from heta_eval.kb import LLMAnswerer
from heta_eval.kb.index.encoders import OpenAIEmbeddingEncoder
from heta_eval.kb.rerank import EndpointReranker

URL = "http://127.0.0.1:1/v1"
SECRET = "sk-test-SECRET-5d1b9a20"


def test_settings_hold_the_variable_name_not_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HETA_SETTINGS_TEST_KEY", SECRET)
    settings = EndpointSettings(base_url=f"{URL}/", model="m", api_key_env="HETA_SETTINGS_TEST_KEY")
    assert settings.base_url == URL and settings.api_key_env == "HETA_SETTINGS_TEST_KEY"
    client = OpenAICompatibleClient.from_settings(settings, extra_headers={"X-Token": SECRET})
    assert client.settings is settings and client.base_url == URL and client.max_retries == 4
    for shown in (repr(settings), settings.model_dump_json(), str(settings.model_dump())):
        assert SECRET not in shown and "HETA_SETTINGS_TEST_KEY" in shown
    assert SECRET not in repr(client)
    with pytest.raises(ValidationError):
        settings.timeout = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"base_url": "localhost:8000"}, "base_url must start with http:// or https://"),
        ({"model": " "}, "model must be a non-empty string"),
        ({"api_key_env": ""}, "api_key_env must be the name of an environment variable"),
        ({"timeout": 0}, "timeout must be > 0 seconds"),
        ({"max_retries": -1}, "max_retries must be >= 0"),
        ({"backoff_seconds": -1}, "backoff_seconds must be >= 0"),
        ({"max_concurrency": 0}, "max_concurrency must be >= 1"),
        ({"timeout": "soon"}, "timeout: Input should be a valid number"),
    ],
)
def test_invalid_settings_say_which(options: dict[str, object], message: str) -> None:
    arguments = {"base_url": URL, "model": "m", **options}
    with pytest.raises(ValueError, match=message):
        EndpointSettings(**arguments)
    with pytest.raises(ValueError, match=message):
        OpenAICompatibleClient(**arguments)  # type: ignore[arg-type]


def test_each_endpoint_user_builds_its_client_from_one_record() -> None:
    common = {"base_url": URL, "model": "m", "timeout": 5.0, "max_retries": 1}
    expected = {"backoff_seconds": 1.0, "max_concurrency": 8, "api_key_env": "OPENAI_API_KEY"}
    judge = LLMJudge(**common)  # type: ignore[arg-type]
    answerer = LLMAnswerer(**common)  # type: ignore[arg-type]
    reranker = EndpointReranker(**common)  # type: ignore[arg-type]
    encoder = OpenAIEmbeddingEncoder(**common)  # type: ignore[arg-type]
    assert judge.client.settings == EndpointSettings(**common, **expected)
    assert answerer.client.settings == judge.client.settings
    # Each user keeps its own defaults.
    assert reranker.client.settings == judge.client.settings.model_copy(
        update={"api_key_env": "RERANK_API_KEY"}
    )
    assert encoder._client.settings == judge.client.settings.model_copy(
        update={"max_concurrency": 4}
    )
