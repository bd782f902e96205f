"""Secrets under any config key reach no writer (issue 23, item 9).

A real `heta-eval` run on a user's JSON Lines benchmark whose `benchmark.metadata` holds
secret-named keys in every spelling (snake, camel, kebab), a `user:password@` URL and an
override whose list value holds a `password`. Afterwards every file under paths.root (the
SQLite store's bytes, MLflow artifacts, report.json, report.html, the state copy,
`.hydra/*.yaml`, the run's log) and the process's stdout and stderr are searched.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from heta_eval.config.secrets import mask_override

from .conftest import jsonl_args, small_benchmark
from .processes import Finished, run_cli

pytestmark = pytest.mark.timeout(300)


def _leaks(root: Path, done: Finished, needle: str) -> list[str]:
    raw = needle.encode()
    found = [str(p) for p in sorted(root.rglob("*")) if p.is_file() and raw in p.read_bytes()]
    found += [
        name for name, text in (("stdout", done.stdout), ("stderr", done.stderr)) if needle in text
    ]
    return found


def test_secrets_under_benchmark_metadata_and_in_override_values_leak_nowhere(
    tmp_path: Path,
) -> None:
    names = ["aws_secret_access_key", "openaiApiKey", "private_key", "clientSecret"]
    names += ["github-token", "url", "listed"]
    secrets = {name: f"s{i}{uuid.uuid4().hex}" for i, name in enumerate(names)}
    docs, cases = small_benchmark(tmp_path, cases=3)
    root = tmp_path / "outputs"
    done = run_cli(
        root,
        tmp_path,
        *jsonl_args(docs, cases, "benchmark.name=leaky"),
        *(f"+benchmark.metadata.{n}={secrets[n]}" for n in names[:5]),
        f"+benchmark.metadata.server=http://user:{secrets['url']}@mlflow.example:5000/v1",
        f"+recipe.metadata.accounts=[{{user: ann, password: {secrets['listed']}}}]",
    )
    assert done.returncode == 0, done.stderr
    run_dir = done.report_path.parent
    # Every writer ran: the report, its page, the state copy, MLflow's artifacts, the log.
    assert (run_dir / "report.html").is_file() and list(run_dir.glob("*.log"))
    assert list(root.glob("state/*/report.json"))
    assert list(root.glob("mlruns/**/report.json"))
    report = (run_dir / "report.json").read_text()
    # What is kept: the keys, their values masked, and the URL without its password.
    assert '"aws_secret_access_key": "***"' in report and '"github-token": "***"' in report
    assert "http://user:***@mlflow.example:5000/v1" in report
    leaked = {name: _leaks(root, done, value) for name, value in secrets.items()}
    assert leaked == {name: [] for name in secrets}


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


def test_the_tracking_servers_credentials_are_secrets_at_any_length() -> None:
    from heta_eval.config.secrets import env_secret_values

    env = {"MLFLOW_TRACKING_PASSWORD": "pw-1234", "MLFLOW_TRACKING_TOKEN": "tok-99"}
    env["MLFLOW_TRACKING_USERNAME"] = "alice-the-user"
    assert env_secret_values(env) == {"pw-1234", "tok-99"}
