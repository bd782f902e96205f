"""Which configuration keys hold secrets (their values are masked wherever the config is
shown): keys naming a key, token, password or credentials, not the name of a variable."""

from __future__ import annotations

import pytest

from heta_eval.config.secrets import is_secret_key


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("api_key", True),
        ("OPENAI_API_KEY", True),
        ("access_token", True),
        ("db_password", True),
        ("tracking.credentials", True),
        ("api_key_env", False),  # the name of a variable, not its value
        ("max_tokens", False),
        ("tokenizer", False),
        ("author", False),
    ],
)
def test_what_counts_as_a_secret(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret
