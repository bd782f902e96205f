"""The one masking rule every writer applies: a known secret in text, a secret-named key, a
value that looks like a credential.

A leaf module (it imports nothing of heta_eval), so that the endpoint client and the records,
which sit below the configuration, and `heta_eval.config.secrets` share it. Every function
here takes time linear in the length of its text: a 100,000-character tag or an 80 MB docid
passes through as fast as it is read (no pattern that backtracks over the text).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
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
    parts: list[str] = []
    done = 0
    start = text.find(head)
    while start != -1:
        end = start + MIN_PREFIX
        while end < len(text) and end - start < len(secret) and text[end] == secret[end - start]:
            end += 1
        parts += [text[done:start], MASK]
        done = end
        start = text.find(head, end)
    return "".join(parts) + text[done:] if parts else text


# The rule on key names (documented in docs/reliability.md, "Secrets"). A key is split into
# lower-cased words at `_`, `-`, `.`, spaces and camel-case humps (`sshKey`: ssh, key).
SECRET_WORDS = frozenset(
    {
        "password", "passwd", "pwd", "passphrase", "secret", "credential", "credentials",
        "cookie", "cookies", "session", "ssh", "bearer", "auth", "authorization", "apikey",
        "accesskey", "secretkey", "privatekey", "sshkey", "authtoken", "accesstoken",
    }
)  # fmt: skip
"""Words that make a key a secret wherever they stand in it (`session_cookie`, `sshKey`)."""
LAST_SECRET_WORDS = frozenset({"key", "token"})
"""Words that make a key a secret as its last word (`key`, `api_key`, `github-token`), not
elsewhere (`token_count`, `key_layout`)."""
POINTER_WORDS = frozenset({"env", "path", "file", "dir", "name", "url", "host", "port"})
POINTER_WORDS |= frozenset({"type", "kind", "mode", "method"})
"""A last word that says the value names where a secret is or what kind it is, not the
secret itself (`api_key_env`, `ssh_key_path`, `auth_mode`)."""
DATA_KEY_WORDS = frozenset(
    {
        "member", "cache", "primary", "sort", "foreign", "partition", "group", "public",
        "build", "lookup", "dict", "index", "metric", "config", "slice", "join", "object",
        "row", "column", "hash", "unit", "case", "document", "doc", "record", "field", "map",
        "sweep", "suite", "label",
    }
)  # fmt: skip
"""`key` after one of these names a key of data, not a secret (`primary_key`, `member_key`)."""
SECRET_SECTIONS = frozenset({"secrets"})
"""Keys under which every value is a secret, whatever its own name."""
_HUMPS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[_\-.\s]+")


def key_words(key: str) -> list[str]:
    """The lower-cased words of a key: `openaiApiKey` -> openai, api, key."""
    return [w for w in _SEPARATORS.split(_HUMPS.sub("_", key).lower()) if w]


def is_secret_key(key: str) -> bool:
    """Whether a key names a secret (`api_key`, `openaiApiKey`, `sshKey`, `pwd`,
    `session_cookie`, `key`, `secrets`; not `api_key_env`, `max_tokens`, `primary_key`)."""
    last = key.rsplit(".", 1)[-1]
    if last.lower() in SECRET_SECTIONS:
        return True
    words = key_words(last)
    if not words or words[-1] in POINTER_WORDS:
        return False
    if words[-1] in LAST_SECRET_WORDS:
        return not (words[-1] == "key" and len(words) > 1 and words[-2] in DATA_KEY_WORDS)
    return any(w in SECRET_WORDS for w in words)


_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_MAX_SCHEME = 32
_AUTHORITY = re.compile(r"[^/\s]*")


def url_password_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of the password of every URL in `text` (`scheme://user:PASSWORD@host`),
    found from each `://` (no pattern that backtracks: linear in the text)."""
    found = text.find("://")
    while found != -1:
        start = found
        while start > 0 and found - start < _MAX_SCHEME and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        after = found + 3
        end = _AUTHORITY.match(text, after).end()  # type: ignore[union-attr]
        if start < found and text[start].isalpha():
            colon = text.find(":", after, end)
            at = text.find("@", after, end)
            if -1 < colon < at - 1:
                yield colon + 1, at
        found = text.find("://", max(end, after))


def mask_url_credentials(text: str) -> str:
    """`text` with the password of every URL in it replaced by `***`."""
    parts: list[str] = []
    done = 0
    for start, end in url_password_spans(text):
        parts += [text[done:start], MASK]
        done = end
    return "".join(parts) + text[done:] if parts else text


# `Bearer abc123...`, `token ghp_...`, `Basic dXNl...`: a scheme word and a credential of 8+
# characters with a digit or both cases (prose such as `token generation` is left alone); the
# space may be escaped (`token\ ghp_...`, as Hydra writes an override).
_CREDENTIAL = re.compile(
    r"\b(?P<word>bearer|token|basic)(?:\\?[ \t])+(?P<value>[A-Za-z0-9._~+/=\-]{8,})", re.I
)
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{1,40}-----")
_PEM_END = "-----END "


def _looks_like_credential(value: str) -> bool:
    return any(c.isdigit() for c in value) or (value.lower() != value and value.upper() != value)


def mask_credential_values(text: str) -> str:
    """`text` with what looks like a credential masked, whatever key holds it: the value
    after `Bearer`/`token`/`Basic`, and the body of a PEM block (`-----BEGIN ... KEY-----`)."""
    if "-----BEGIN " in text:
        parts: list[str] = []
        done = 0
        for begin in _PEM_BEGIN.finditer(text):
            if begin.start() < done:
                continue
            end = text.find(_PEM_END, begin.end())
            parts += [text[done : begin.end()], MASK]
            done = len(text) if end == -1 else end
        text = "".join(parts) + text[done:]
    return _CREDENTIAL.sub(
        lambda m: (
            f"{m.group('word')} {MASK}" if _looks_like_credential(m.group("value")) else m.group(0)
        ),
        text,
    )


def mask_credentials(text: str) -> str:
    """`text` with URL passwords and credential-looking values masked."""
    return mask_credential_values(mask_url_credentials(text))


def mask_named(value: Any) -> Any:
    """A copy of `value` (JSON-like) with the values under secret-named keys masked, URL
    passwords and credential-looking values masked: what needs no knowledge of the process
    (environment, config origin)."""
    if isinstance(value, Mapping):
        return {
            k: (MASK if is_secret_key(str(k)) and v not in (None, "", {}) else mask_named(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [mask_named(v) for v in value]
    if isinstance(value, str):
        return mask_credentials(value)
    return value
