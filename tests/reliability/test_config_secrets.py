"""API keys and other secrets never reach MLflow, reports, Hydra's files, logs or the console
(issue 17, items 1 and 2; issue 23, item 9).

Real `heta-eval` runs (the CLI in this process; an LLM answerer and judge served by a local
OpenAI-compatible server, tests/openai_server.py): keys from environment variables (read by
the clients, or interpolated with `${oc.env:...}`), on the command line, under secret-named
config keys in every spelling (snake, camel, kebab), in a `user:password@` URL, inside a list
value of an override, echoed back by a server's error. Afterwards every file under
paths.root (the SQLite store's bytes, MLflow artifacts, report.json, report.html, the state
copy, config.resolved.yaml, `.hydra/*.yaml`, the run's log, the journal and caches) and the
run's stdout and stderr are searched.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from heta_eval.config.secrets import (
    env_secret_values,
    is_secret_key,
    mask_override,
    mask_secrets,
    scrub,
)
from heta_eval.endpoints import OpenAICompatibleClient
from heta_eval.endpoints.client import EndpointError

from ..cli_in_process import CliResult
from ..conftest import InProcessCli
from ..openai_server import Reply, serve_chat
from .conftest import jsonl_args, report_path, small_benchmark

KEY_ENV = "HETA_RELIABILITY_KEY"


def _leaks(root: Path, done: CliResult, needle: str) -> list[str]:
    """Every file under root, and the output streams, that contain `needle`."""
    raw = needle.encode()
    found = [str(p) for p in sorted(root.rglob("*")) if p.is_file() and raw in p.read_bytes()]
    found += [
        name for name, text in (("stdout", done.stdout), ("stderr", done.stderr)) if needle in text
    ]
    return found


def _llm_args(base_url: str, root: Path) -> tuple[str, ...]:
    return (
        "recipe=bm25_llm",
        f"recipe.answerer.base_url={base_url}",
        f"recipe.answerer.api_key_env={KEY_ENV}",
        f"recipe.answerer.cache_dir={root / 'answers'}",
        "evaluator=llm_judge",
        f"evaluator.extra.0.base_url={base_url}",
        f"evaluator.extra.0.api_key_env={KEY_ENV}",
        f"evaluator.extra.0.cache_dir={root / 'judge'}",
        "runner.limit=3",
    )


def test_keys_from_the_environment_and_the_command_line_leak_nowhere(
    cli: InProcessCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_key = f"sk-env-{uuid.uuid4().hex}"
    cli_key = f"sk-cli-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_ENV, env_key)
    root = tmp_path / "outputs"
    with serve_chat() as server:
        done = cli(
            *_llm_args(server.base_url, root),
            "+recipe.metadata.api_key=${oc.env:" + KEY_ENV + "}",
            f"+recipe.metadata.auth_token={cli_key}",
        )
        assert done.returncode == 0, done.stderr
        # The key was really used: every request carried it.
        assert server.requests and all(
            r.headers.get("authorization") == f"Bearer {env_key}" for r in server.requests
        )
        assert {r.path for r in server.requests} == {"/v1/chat/completions"}
    run_dir = report_path(done.stdout).parent
    assert (run_dir / ".hydra" / "overrides.yaml").is_file()
    assert "recipe.metadata.auth_token=***" in (run_dir / ".hydra" / "overrides.yaml").read_text()
    assert list(root.glob("mlruns/**/report.json"))
    assert list(run_dir.glob("*.log"))
    assert _leaks(root, done, env_key) == []
    assert _leaks(root, done, cli_key) == []


def test_a_key_on_a_sweep_command_line_leaks_nowhere(cli: InProcessCli, tmp_path: Path) -> None:
    cli_key = f"sk-sweep-{uuid.uuid4().hex}"
    root = tmp_path / "outputs"
    done = cli(
        "-m", "runner.limit=2", "recipe.chunk_size=32,64", f"+recipe.metadata.api_key={cli_key}"
    )
    assert done.returncode == 0, done.stderr
    assert list(root.glob("multiruns/*/*/multirun.yaml"))
    assert _leaks(root, done, cli_key) == []


def test_a_key_echoed_late_in_an_error_body_leaks_nowhere(
    cli: InProcessCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-" + uuid.uuid4().hex + uuid.uuid4().hex[:13]  # 48 characters, like OpenAI's
    monkeypatch.setenv(KEY_ENV, key)
    message = "x" * 103 + " Invalid API key provided: " + key
    body = {"error": {"message": message}}
    assert 150 <= len('{"error": {"message": "') + message.index(key) <= 160
    root = tmp_path / "outputs"
    with serve_chat() as server:
        server.respond = lambda path, _body: Reply(401, body)
        server.replies = [Reply(401, body) for _ in range(20)]
        done = cli(
            "recipe=bm25_llm",
            f"recipe.answerer.base_url={server.base_url}",
            f"recipe.answerer.api_key_env={KEY_ENV}",
            f"recipe.answerer.cache_dir={root / 'answers'}",
            "runner.limit=3",
        )
        assert server.requests, done.stderr
    reports = list(root.rglob("report.json"))
    assert reports, done.stdout + done.stderr
    # The failure reason is kept (the 401 and the server's words), without the key.
    assert "HTTP 401" in reports[0].read_text()
    assert "Invalid API key provided: ***" in reports[0].read_text()
    assert list(root.glob("mlruns/**/report.json"))
    assert _leaks(root, done, key[:12]) == []


def test_secrets_under_any_key_in_values_and_from_the_environment_leak_nowhere(
    cli: InProcessCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under the recipe's and under the benchmark's metadata, in every spelling.
    names = ["openaiApiKey", "aws_secret_access_key", "private_key", "clientSecret"]
    names += ["github-token", "secrets.anything"]
    secrets = {f"{g}.{n}": f"s{uuid.uuid4().hex}" for g in ("recipe", "benchmark") for n in names}
    secrets |= {k: f"s{uuid.uuid4().hex}" for k in ("hint", "url", "note", "listed")}
    monkeypatch.setenv("HETA_LEAK_HINT", secrets["hint"])
    monkeypatch.setenv("MY_SERVICE_TOKEN", secrets["note"])
    docs, cases = small_benchmark(tmp_path, cases=3)
    root = tmp_path / "outputs"
    done = cli(
        *jsonl_args(docs, cases, "benchmark.name=leaky"),
        *(
            f"+{g}.metadata.{n}={secrets[f'{g}.{n}']}"
            for g in ("recipe", "benchmark")
            for n in names
        ),
        "+recipe.metadata.hint=${oc.env:HETA_LEAK_HINT}",
        f"+recipe.metadata.note={secrets['note']}",  # the value of MY_SERVICE_TOKEN
        f"+benchmark.metadata.server=http://user:{secrets['url']}@mlflow.example:5000/v1",
        f"+recipe.metadata.accounts=[{{user: ann, password: {secrets['listed']}}}]",
    )
    assert done.returncode == 0, done.stderr
    run_dir = report_path(done.stdout).parent
    # Every writer ran: the report, its page, the state copy, MLflow's artifacts, the log.
    assert (run_dir / "report.html").is_file() and list(run_dir.glob("*.log"))
    assert list(run_dir.glob(".hydra/*.yaml"))
    assert list(root.glob("state/*/report.json"))
    assert list(root.glob("mlruns/**/report.json"))
    # What is kept: the keys, their values masked, and the URL without its password.
    resolved = (run_dir / "config.resolved.yaml").read_text()
    assert "server: http://user:***@mlflow.example:5000/v1" in resolved
    assert "openaiApiKey: '***'" in resolved
    report = (run_dir / "report.json").read_text()
    assert '"aws_secret_access_key": "***"' in report and '"github-token": "***"' in report
    assert "http://user:***@mlflow.example:5000/v1" in report
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


def test_the_tracking_servers_credentials_are_secrets_at_any_length() -> None:
    env = {"MLFLOW_TRACKING_PASSWORD": "pw-1234", "MLFLOW_TRACKING_TOKEN": "tok-99"}
    env["MLFLOW_TRACKING_USERNAME"] = "alice-the-user"
    assert env_secret_values(env) == {"pw-1234", "tok-99"}


@pytest.mark.parametrize(
    ("override", "shown"),
    [
        (
            "+a.accounts=[{user: ann, password: hunter2}]",
            "+a.accounts=[{user: ann, password: ***}]",
        ),
        ("+a.x={clientSecret: 'a b', name: n}", "+a.x={clientSecret: ***, name: n}"),
        ("+a.x=[{github-token: abc}]", "+a.x=[{github-token: ***}]"),
        ("+a.x=[{user: ann, note: plain}]", "+a.x=[{user: ann, note: plain}]"),
    ],
)
def test_secret_keys_inside_an_override_value_are_masked(override: str, shown: str) -> None:
    assert mask_override(override) == shown


def test_an_echoed_prefix_of_the_key_is_redacted_from_the_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
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
