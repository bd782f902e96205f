"""The one masking rule every writer applies: a known secret in text, a secret-named key.

A leaf module (it imports nothing of heta_eval), so that the endpoint client and the records,
which sit below the configuration, and `heta_eval.config.secrets` share it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MASK = "***"
MIN_PREFIX = 8
"""A leaked prefix this long of a known secret is masked too (an error body cut short)."""


def redact(text: str, secret: str) -> str:
    """`text` with `secret`, and every run of `MIN_PREFIX` or more of its leading
    characters, replaced by `MASK`."""
    text = text.replace(secret, MASK)
    if len(secret) <= MIN_PREFIX:
        return text
    head = secret[:MIN_PREFIX]
    start = text.find(head)
    while start != -1:
        end = start + MIN_PREFIX
        while end < len(text) and end - start < len(secret) and text[end] == secret[end - start]:
            end += 1
        text = text[:start] + MASK + text[end:]
        start = text.find(head, start + len(MASK))
    return text


# A key names a secret when its last word is one of these (`api_key`, `access_token`,
# `db_password`), not when it merely contains one (`max_tokens`, `api_key_env`, `author`).
SECRET_KEY = re.compile(
    r"(?:^|[_\-.])(?:api[_-]?key|apikey|token|secret|(?:secret|private|access)[_-]?key|"
    r"secret[_-]?access[_-]?key|password|passwd|passphrase|credentials?|authorization|auth)$",
    re.I,
)
SECRET_SECTIONS = frozenset({"secrets"})
"""Keys under which every value is a secret, whatever its own name."""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
URL_CREDENTIALS = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:)(?P<pw>[^/\s@]+)@")


def is_secret_key(key: str) -> bool:
    """Whether a key names a secret (`api_key`, `openaiApiKey`, `github-token`, `secrets`)."""
    last = key.rsplit(".", 1)[-1]
    return bool(SECRET_KEY.search(_CAMEL.sub("_", last))) or last.lower() in SECRET_SECTIONS


def mask_url_credentials(text: str) -> str:
    """`text` with the password of every URL in it replaced by `***`."""
    return URL_CREDENTIALS.sub(lambda m: f"{m.group('head')}{MASK}@", text)


def mask_named(value: Any) -> Any:
    """A copy of `value` (JSON-like) with the values under secret-named keys masked and URL
    passwords masked: what needs no knowledge of the process (environment, config origin)."""
    if isinstance(value, Mapping):
        return {
            k: (MASK if is_secret_key(str(k)) and v not in (None, "", {}) else mask_named(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [mask_named(v) for v in value]
    if isinstance(value, str):
        return mask_url_credentials(value)
    return value
