"""API keys never reach MLflow, reports, Hydra's files, logs or the console.

A real `heta-eval` run with an LLM answerer and an LLM judge against a local
OpenAI-compatible server (tests/openai_server.py): the key comes once from an environment
variable (read by the clients, and interpolated into the config with `${oc.env:...}`) and
once literally on the command line. Then every file under paths.root (the SQLite store's
bytes, MLflow artifacts, report.json, config.resolved.yaml, `.hydra/*.yaml`, the run's log,
the caches) and the process's stdout and stderr are searched for the key.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from ..openai_server import serve_chat
from .processes import Finished, run_cli

KEY_ENV = "HETA_RELIABILITY_KEY"


def _leaks(root: Path, done: Finished, secret: str) -> list[str]:
    """Every file under root, and the output streams, that contain `secret`."""
    needle = secret.encode()
    found = [str(p) for p in sorted(root.rglob("*")) if p.is_file() and needle in p.read_bytes()]
    found += [
        name for name, text in (("stdout", done.stdout), ("stderr", done.stderr)) if secret in text
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


def test_keys_from_the_environment_and_the_command_line_leak_nowhere(tmp_path: Path) -> None:
    env_key = f"sk-env-{uuid.uuid4().hex}"
    cli_key = f"sk-cli-{uuid.uuid4().hex}"
    root = tmp_path / "outputs"
    with serve_chat() as server:
        done = run_cli(
            root,
            tmp_path,
            *_llm_args(server.base_url, root),
            "+recipe.metadata.api_key=${oc.env:" + KEY_ENV + "}",
            f"+recipe.metadata.auth_token={cli_key}",
            **{KEY_ENV: env_key},
        )
        assert done.returncode == 0, done.stderr
        # The key was really used: every request carried it.
        assert server.requests and all(
            r.headers.get("authorization") == f"Bearer {env_key}" for r in server.requests
        )
        paths = {r.path for r in server.requests}
        assert paths == {"/v1/chat/completions"}
    run_dir = done.report_path.parent
    assert (run_dir / ".hydra" / "overrides.yaml").is_file()
    assert "recipe.metadata.auth_token=***" in (run_dir / ".hydra" / "overrides.yaml").read_text()
    assert list(root.glob("mlruns/**/report.json"))
    assert list(run_dir.glob("*.log"))
    assert _leaks(root, done, env_key) == []
    assert _leaks(root, done, cli_key) == []


def test_a_key_on_a_sweep_command_line_leaks_nowhere(tmp_path: Path) -> None:
    cli_key = f"sk-sweep-{uuid.uuid4().hex}"
    root = tmp_path / "outputs"
    done = run_cli(
        root,
        tmp_path,
        "-m",
        "runner.limit=2",
        "recipe.chunk_size=32,64",
        f"+recipe.metadata.api_key={cli_key}",
    )
    assert done.returncode == 0, done.stderr
    assert list(root.glob("multiruns/*/*/multirun.yaml"))
    assert _leaks(root, done, cli_key) == []
