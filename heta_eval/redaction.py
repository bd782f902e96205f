"""Masking a known secret in text: the one rule every writer of text applies.

A leaf module (it imports nothing of heta_eval), so that the endpoint client, which sits
below the configuration, and `heta_eval.config.secrets` share it.
"""

from __future__ import annotations

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
