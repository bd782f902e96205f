"""Secrets that leaked before the second hardening round (issue 17, items 1 and 2).

Real `heta-eval` runs; afterwards every file under paths.root (the SQLite store's bytes,
MLflow artifacts, report.json, report.html, config.resolved.yaml, `.hydra/*.yaml`, the run's
log, the journal and caches) and the process's stdout and stderr are searched.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from heta_eval.config.secrets import env_secret_values, is_secret_key, mask_secrets, scrub

from ..openai_server import Reply, serve_chat
from .processes import Finished, run_cli

KEY_ENV = "HETA_LEAK_TEST_KEY"

pytestmark = pytest.mark.timeout(300)


def _leaks(root: Path, done: Finished, needle: str) -> list[str]:
    """Every file under root, and the output streams, that contain `needle`."""
    raw = needle.encode()
    found = [str(p) for p in sorted(root.rglob("*")) if p.is_file() and raw in p.read_bytes()]
    found += [
        name for name, text in (("stdout", done.stdout), ("stderr", done.stderr)) if needle in text
    ]
    return found


def test_a_key_echoed_late_in_an_error_body_leaks_nowhere(tmp_path: Path) -> None:
    key = "sk-" + uuid.uuid4().hex + uuid.uuid4().hex[:13]  # 48 characters, like OpenAI's
    message = "x" * 103 + " Invalid API key provided: " + key
    body = {"error": {"message": message}}
    assert 150 <= len('{"error": {"message": "') + message.index(key) <= 160
    root = tmp_path / "outputs"
    with serve_chat() as server:
        server.respond = lambda path, _body: Reply(401, body)
        server.replies = [Reply(401, body) for _ in range(20)]
        done = run_cli(
            root,
            tmp_path,
            "recipe=bm25_llm",
            f"recipe.answerer.base_url={server.base_url}",
            f"recipe.answerer.api_key_env={KEY_ENV}",
            f"recipe.answerer.cache_dir={root / 'answers'}",
            "runner.limit=3",
            **{KEY_ENV: key},
        )
        assert server.requests, done.stderr
    reports = list(root.rglob("report.json"))
    assert reports, done.stdout + done.stderr
    # The failure reason is kept (the 401 and the server's words), without the key.
    assert "HTTP 401" in reports[0].read_text()
    assert "Invalid API key provided: ***" in reports[0].read_text()
    assert list(root.glob("mlruns/**/report.json"))
    assert _leaks(root, done, key[:12]) == []


def test_secrets_under_common_names_and_in_values_leak_nowhere(tmp_path: Path) -> None:
    secrets = {name: f"{name}-{uuid.uuid4().hex}" for name in "abcdefg"}
    root = tmp_path / "outputs"
    done = run_cli(
        root,
        tmp_path,
        "runner.limit=2",
        f"+recipe.metadata.openaiApiKey={secrets['a']}",
        f"+recipe.metadata.aws_secret_access_key={secrets['b']}",
        f"+recipe.metadata.private_key={secrets['c']}",
        f"+recipe.metadata.secrets.anything={secrets['d']}",
        "+recipe.metadata.hint=${oc.env:HETA_LEAK_HINT}",
        f"+recipe.metadata.server=http://user:{secrets['f']}@mlflow.example:5000/v1",
        f"+recipe.metadata.note={secrets['g']}",
        HETA_LEAK_HINT=secrets["e"],
        MY_SERVICE_TOKEN=secrets["g"],
    )
    assert done.returncode == 0, done.stderr
    run_dir = done.report_path.parent
    resolved = (run_dir / "config.resolved.yaml").read_text()
    assert "server: http://user:***@mlflow.example:5000/v1" in resolved
    assert "openaiApiKey: '***'" in resolved
    assert list(run_dir.glob(".hydra/*.yaml")) and list(run_dir.glob("*.log"))
    assert list(root.glob("mlruns/**/report.json"))
    leaked = {name: _leaks(root, done, value) for name, value in secrets.items()}
    assert leaked == {name: [] for name in secrets}


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("openaiApiKey", True),
        ("aws_secret_access_key", True),
        ("private_key", True),
        ("clientSecret", True),
        ("secrets", True),
        ("api_key_env", False),
        ("max_tokens", False),
        ("primary_key", False),
        ("cache_key", False),
    ],
)
def test_key_names(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_a_prefix_of_a_secret_is_scrubbed_but_not_a_short_one() -> None:
    key = "sk-abcdefghijklmnopqrstuvwxyz0123456789"
    assert scrub(f"cut: {key[:20]}", [key]) == "cut: ***"
    assert scrub(f"short: {key[:7]}", [key]) == f"short: {key[:7]}"
    masked = mask_secrets({"a": {"secrets": {"x": "1", "y": {"z": "2"}}, "b": "http://u:pw@h/"}})
    assert masked == {"a": {"secrets": "***", "b": "http://u:***@h/"}}


def test_which_environment_variables_count_as_secrets() -> None:
    env = {
        "OPENAI_API_KEY": "sk-abcdefghijkl",
        "GITHUB_TOKEN": "ghp_abcdefghijkl",
        "DB_PASSWORD": "hunter2hunter2",
        "SSH_KEY_PATH": "not-a-path-but-named-so",
        "API_KEY_ENV": "OPENAI_API_KEY",
        "MY_TOKEN": "/home/user/.token",
        "TOKENIZERS_PARALLELISM": "false-false",
        "SHORT_KEY": "abc",
    }
    assert env_secret_values(env) == {"sk-abcdefghijkl", "ghp_abcdefghijkl", "hunter2hunter2"}


def test_an_echoed_prefix_of_the_key_is_redacted_from_the_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from heta_eval.endpoints import OpenAICompatibleClient
    from heta_eval.endpoints.client import EndpointError

    key = "sk-" + uuid.uuid4().hex
    monkeypatch.setenv(KEY_ENV, key)
    with serve_chat() as server:
        body = {"error": {"message": f"Incorrect API key provided: {key[:20]}****{key[-4:]}"}}
        server.replies = [Reply(401, body)]
        client = OpenAICompatibleClient(server.base_url, "m", api_key_env=KEY_ENV, max_retries=0)

        async def call() -> None:
            async with client:
                await client.chat([{"role": "user", "content": "hi"}])

        with pytest.raises(EndpointError) as caught:
            asyncio.run(call())
    assert "HTTP 401" in str(caught.value) and "provided: ***" in str(caught.value)
    assert key[:8] not in str(caught.value)
