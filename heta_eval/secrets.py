"""Keep secrets (API keys, tokens, passwords) out of logs, params and reports."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# A key names a secret when its last word is one of these (`api_key`, `access_token`,
# `db_password`), not when it merely contains one (`max_tokens`, `api_key_env`, `author`).
SECRET_KEY = re.compile(
    r"(?:^|[_\-.])(?:api[_-]?key|apikey|token|secret|secret[_-]?key|password|passwd|"
    r"credentials?|authorization|auth)$",
    re.I,
)
MASK = "***"


def is_secret_key(key: str) -> bool:
    """Whether a config key names a secret (API keys, tokens, passwords)."""
    return bool(SECRET_KEY.search(key.rsplit(".", 1)[-1]))


def mask_secrets(config: Any) -> Any:
    """A copy of `config` with every value under a secret-looking key replaced by `***`."""
    if isinstance(config, Mapping):
        return {
            k: (MASK if is_secret_key(str(k)) and v not in (None, "") else mask_secrets(v))
            for k, v in config.items()
        }
    if isinstance(config, list | tuple):
        return [mask_secrets(v) for v in config]
    return config
