"""Tiktoken encodings from local copies only, so that a Heta build never reaches the network.

Heta's `ParseDocuments` counts tokens with `tiktoken.get_encoding("cl100k_base")`, which
downloads the encoding (no timeout) unless it is in tiktoken's cache, and retries for every
document when that fails. Before building, the bridge loads the encodings the recipe needs
from a local copy (TIKTOKEN_CACHE_DIR, DATA_GYM_CACHE_DIR, tiktoken's default cache, or the
copy bundled with `litellm`, a dependency of Heta) into tiktoken's in-process registry, so
Heta never reaches for the network. When no local copy exists and `allow_network` is false,
token counts fall back to Heta's own word count for the build, and a tiktoken split encoding
that is not available locally is refused up front.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# tiktoken caches a downloaded encoding under sha1(blob URL); these are the file names of the
# encodings published at openaipublic.blob.core.windows.net/encodings/{name}.tiktoken.
_TIKTOKEN_CACHE_FILES = {
    name: hashlib.sha1(
        f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken".encode()
    ).hexdigest()
    for name in ("cl100k_base", "o200k_base", "p50k_base", "r50k_base")
}
_TIKTOKEN_LOCK = threading.Lock()
_PATCH_LOCK = threading.Lock()
_patch_depth = 0


def encoding_names(spec: Any) -> set[str]:
    """Every `encoding_name` in the step specs (SplitDocuments' tokenizer)."""
    found: set[str] = set()
    if isinstance(spec, Mapping):
        for key, value in spec.items():
            if key == "encoding_name" and isinstance(value, str):
                found.add(value)
            else:
                found |= encoding_names(value)
    elif isinstance(spec, list | tuple):
        for item in spec:
            found |= encoding_names(item)
    return found


def _tiktoken_cache_dirs() -> list[Path]:
    """Where a local copy of a tiktoken encoding may be, in the order tiktoken would look."""
    dirs = [os.environ.get("TIKTOKEN_CACHE_DIR"), os.environ.get("DATA_GYM_CACHE_DIR")]
    dirs.append(os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    spec = importlib.util.find_spec("litellm")  # does not import litellm
    if spec is not None and spec.origin:
        dirs.append(str(Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"))
    return [Path(d) for d in dirs if d]


@contextlib.contextmanager
def _environ(key: str, value: str) -> Iterator[None]:
    old = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


def preload_tiktoken(names: set[str]) -> dict[str, str]:
    """Load tiktoken encodings from local copies only; returns where each came from.

    A loaded encoding stays in tiktoken's in-process registry, so later
    `tiktoken.get_encoding(name)` calls (Heta's) neither download nor stall.
    """
    import tiktoken.registry

    status: dict[str, str] = {}
    with _TIKTOKEN_LOCK:
        for name in sorted(names):
            if name in tiktoken.registry.ENCODINGS:
                status[name] = "in-process"
                continue
            status[name] = "unavailable offline"
            filename = _TIKTOKEN_CACHE_FILES.get(name)
            if filename is None:
                continue
            for directory in _tiktoken_cache_dirs():
                if not (directory / filename).is_file():
                    continue
                try:
                    with _environ("TIKTOKEN_CACHE_DIR", str(directory)):
                        tiktoken.get_encoding(name)
                except Exception as exc:  # a corrupt copy: try the next one
                    log.debug("tiktoken %s from %s failed: %s", name, directory, exc)
                    continue
                status[name] = str(directory)
                break
    return status


@contextlib.contextmanager
def _word_count_token_counts() -> Iterator[None]:
    """While active, Heta's ParseDocuments counts words (its own fallback), not tiktoken."""
    global _patch_depth
    from heta_framework.kb.steps import parse

    with _PATCH_LOCK:
        if _patch_depth == 0:
            parse._heta_eval_original_count = parse._token_count_for_text  # type: ignore[attr-defined]
            parse._token_count_for_text = lambda text: len(text.split())
        _patch_depth += 1
    try:
        yield
    finally:
        with _PATCH_LOCK:
            _patch_depth -= 1
            if _patch_depth == 0:
                parse._token_count_for_text = parse._heta_eval_original_count  # type: ignore[attr-defined]


@contextlib.contextmanager
def offline_tokenizer(steps: Any, *, allow_network: bool) -> Iterator[dict[str, str]]:
    """While active, the encodings `steps` need (and cl100k_base, Heta's token counts) come
    from local copies; yields where each came from. A split encoding that is not available
    offline is refused unless `allow_network`; without a local cl100k_base, token counts
    are word counts."""
    split_encodings = encoding_names(steps) - {"unicode"}
    status = preload_tiktoken({"cl100k_base", *split_encodings})
    missing = [n for n in split_encodings if status[n] == "unavailable offline"]
    if missing and not allow_network:
        raise RuntimeError(
            f"tiktoken encoding(s) {missing} used by a split step are not available "
            "offline; use encoding_name: unicode, put the encoding in TIKTOKEN_CACHE_DIR, "
            "or set allow_network: true"
        )
    if status["cl100k_base"] == "unavailable offline" and not allow_network:
        log.warning(
            "tiktoken cl100k_base is not available offline: Heta's document token "
            "counts fall back to word counts"
        )
        with _word_count_token_counts():
            yield status
    else:
        yield status
