"""Secrets in shapes the masking did not know (issue 36, items 7 and 9).

- Keys outside the list leaked: `sshKey`, `pwd`, `key`, `session_cookie`, and a value
  `token ...` under `note`. The key rule now goes by word parts, in any case and with any
  separators, and values that look like credentials (`Bearer ...`, `token ...`, PEM blocks)
  are masked whatever their key.
- The URL-credential pattern backtracked quadratically: 32,000 characters took 0.83 s, a
  100,000-character run tag 26 s. Every masking function is now linear in its text.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from heta_eval.config.secrets import mask_assignments, mask_secrets, mask_text
from heta_eval.redaction import (
    is_secret_key,
    mask_credential_values,
    mask_named,
    mask_url_credentials,
)

from ..conftest import InProcessCli


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("sshKey", True),
        ("pwd", True),
        ("key", True),
        ("session_cookie", True),
        ("SESSION-COOKIE", True),
        ("bearer", True),
        ("auth", True),
        ("passwd", True),
        ("ssh_private_key", True),
        ("APIKey", True),
        ("ssh_key_path", False),  # where the key is, not the key
        ("api_key_env", False),
        ("auth_mode", False),
        ("primary_key", False),  # a key of data
        ("member_key", False),
        ("note", False),
        ("max_tokens", False),
        ("author", False),
    ],
)
def test_the_secret_name_rules(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("token ghp_0123456789abcdef", "token ***"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.x", "Authorization: Bearer ***"),
        ("Basic dXNlcjpwYXNzd29yZA==", "Basic ***"),
        ("token generation failed", "token generation failed"),  # prose stays
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----***-----END RSA PRIVATE KEY-----",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn (cut)",
            "-----BEGIN OPENSSH PRIVATE KEY-----***",
        ),
    ],
)
def test_values_that_look_like_credentials_are_masked_whatever_their_key(
    text: str, masked: str
) -> None:
    assert mask_credential_values(text) == masked
    assert mask_named({"note": text}) == {"note": masked}
    assert mask_secrets({"note": text}) == {"note": masked}


def test_secret_assignments_in_free_text_are_masked() -> None:
    line = "\t#0 : runner.limit=2 +recipe.metadata.pwd=abc key='a b' max_tokens=5 x=session"
    assert mask_assignments(line) == (
        "\t#0 : runner.limit=2 +recipe.metadata.pwd=*** key=*** max_tokens=5 x=session"
    )


@pytest.mark.parametrize(
    "text",
    [
        "a" * 200_000,  # a run of scheme characters: the old pattern tried every start
        "x://" + "a:" * 100_000,
        "token " * 40_000,
        "key=" * 50_000,
        "-----BEGIN A-----" * 10_000,
    ],
)
def test_masking_is_linear_in_the_text(text: str) -> None:
    started = time.perf_counter()
    mask_url_credentials(text)
    mask_text(text, ["0123456789abcdef"])
    assert time.perf_counter() - started < 1.0  # the old URL pattern: minutes


def test_secrets_under_the_new_names_and_in_values_leak_nowhere(
    cli: InProcessCli, tmp_path: Path
) -> None:
    values = {key: f"s{uuid.uuid4().hex}" for key in ("sshKey", "pwd", "key", "session_cookie")}
    token = f"ghp_{uuid.uuid4().hex}"
    done = cli(
        "tracking=none",
        "runner.limit=2",
        *(f"+recipe.metadata.{key}={value}" for key, value in values.items()),
        f"+recipe.metadata.note='token {token}'",
    )
    assert done.returncode == 0, done.stderr
    root = tmp_path / "outputs"
    assert list(root.glob("runs/*/*/report.json"))
    for needle in [*values.values(), token]:
        leaked = [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]
        assert leaked == [], needle
        assert needle not in done.stdout + done.stderr
