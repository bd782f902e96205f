"""Keep secrets (API keys, tokens, passwords) out of logs, params and reports."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
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


def mask_override(override: str) -> str:
    """A command-line override with its value masked when its key names a secret
    (`+recipe.metadata.api_key=sk-...` becomes `+recipe.metadata.api_key=***`)."""
    key, sep, value = override.partition("=")
    if sep and value and is_secret_key(key.lstrip("+~")):
        return f"{key}={MASK}"
    return override


def secret_values(config: Any) -> set[str]:
    """The values under secret-looking keys of a resolved config (to scrub from files)."""
    found: set[str] = set()
    if isinstance(config, Mapping):
        for key, value in config.items():
            if is_secret_key(str(key)) and isinstance(value, str | int) and str(value).strip():
                found.add(str(value).strip())
            else:
                found |= secret_values(value)
    elif isinstance(config, list | tuple):
        for value in config:
            found |= secret_values(value)
    return found


# Shorter values are not scrubbed from text: they would mangle unrelated words, and are no
# real keys.
MIN_SCRUBBED = 6


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each secret value replaced by `***`."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_SCRUBBED:
            text = text.replace(secret, MASK)
    return text


def scrub_file(path: Path, secrets: Iterable[str]) -> bool:
    """Rewrite a text file (atomically) without the secret values; whether it changed."""
    import os
    import stat
    import tempfile

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    clean = scrub(text, secrets)
    if clean == text:
        return False
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(fd, stat.S_IMODE(os.stat(path).st_mode))  # the mode the file had
        handle.write(clean)
    os.replace(tmp, path)
    return True
