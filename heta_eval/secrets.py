"""Keep secrets (API keys, tokens, passwords) out of logs, params and reports."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|credential|auth)", re.I)
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
