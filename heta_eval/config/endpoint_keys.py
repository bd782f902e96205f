"""Endpoints of a configuration whose API key is not in the environment, found before any work.

An endpoint component is a spec with a `base_url` (the LLM answerer, the endpoint reranker,
the embeddings encoder, the LLM judge). Its key is read from the environment variable
`api_key_env` names (the argument's default when the spec leaves it out); `null` means a
server without authentication. A configuration without endpoints never needs a key.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from heta_eval.config.components import ComponentError, resolve_target


def _default_key_env(target: str) -> str | None:
    """The default of `api_key_env` in `target`'s signature (None when it has none)."""
    try:
        parameter = inspect.signature(resolve_target(target)).parameters.get("api_key_env")
    except (ComponentError, TypeError, ValueError):
        return None
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return None
    return parameter.default if isinstance(parameter.default, str) else None


def _shown(url: Any) -> str:
    """`url` without credentials (user:password@) for a message."""
    parts = urlsplit(str(url))
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else "?"


def _endpoint_specs(value: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(value, Mapping):
        if "_target_" in value and "base_url" in value:
            yield where, value
        for key, item in value.items():
            yield from _endpoint_specs(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _endpoint_specs(item, f"{where}.{i}")


def missing_endpoint_keys(resolved: Mapping[str, Any], groups: tuple[str, ...]) -> list[str]:
    """One line per endpoint under `groups` of `resolved` whose key variable is unset."""
    problems = []
    for group in groups:
        for where, spec in _endpoint_specs(resolved.get(group), group):
            if "api_key_env" in spec:
                variable = spec["api_key_env"]
            else:
                variable = _default_key_env(str(spec["_target_"]))
            if not isinstance(variable, str) or not variable:
                continue
            if not os.environ.get(variable, "").strip():
                problems.append(
                    f"{where}.api_key_env: environment variable {variable} is not set; the "
                    f"endpoint {_shown(spec['base_url'])} needs its API key there (set it, or "
                    f"{where}.api_key_env=null for a server without authentication)"
                )
    return problems
