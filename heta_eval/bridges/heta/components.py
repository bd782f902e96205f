"""Heta's component groups from `_target_` specs, and the installed heta-framework version.

A `HetaRecipe` keeps its stores, parsers, models and steps as plain specs (OmegaConf
containers converted) and instantiates them for every build with these helpers.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

from heta_eval.config.components import instantiate

INSTALL_HINT = "pip install 'heta-eval[heta]'"
STORE_KINDS = ("objects", "vector", "sql", "graph", "text_index")
MODEL_KINDS = ("language", "embedding", "reranker")
PARSER_KINDS = ("documents",)


class HetaNotInstalledError(ImportError):
    """heta-framework is not installed."""


def require_heta() -> str:
    """The installed heta-framework version; a clear error when it is missing."""
    try:
        found = importlib.util.find_spec("heta_framework") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise HetaNotInstalledError(
            f"the Heta bridge needs the heta-framework package: {INSTALL_HINT}"
        )
    try:
        return metadata.version("heta-framework")
    except metadata.PackageNotFoundError:  # pragma: no cover - vendored copy
        return "unknown"


def plain(value: Any) -> Any:
    """Specs as plain dicts/lists (OmegaConf containers come in when built by Hydra)."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(value, DictConfig | ListConfig):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def build(spec: Any, where: str) -> Any:
    """Instantiate one `_target_` spec; `where` names it in the error."""
    if isinstance(spec, Mapping) and "_target_" in spec:
        return instantiate(spec)
    raise ValueError(f"{where}: expected a mapping with a _target_, got {spec!r:.80}")


def component_group(specs: Mapping[str, Any], kinds: Sequence[str], where: str) -> dict[str, Any]:
    """Instantiate one Heta component group (`stores`, `parsers`, `models`)."""
    unknown = sorted(set(specs) - {*kinds, "named"})
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}; allowed: {[*kinds, 'named']}")
    created: dict[str, Any] = {
        kind: build(spec, f"{where}.{kind}") for kind, spec in specs.items() if kind != "named"
    }
    named = specs.get("named") or {}
    created["named"] = {k: build(v, f"{where}.named.{k}") for k, v in named.items()}
    return created


def heta_kb_name(name: str) -> str:
    """A name Heta accepts: letters, digits, space, `_`, `-`; at most 80 characters."""
    clean = re.sub(r"[^\w \-]+", "_", name, flags=re.UNICODE).strip() or "kb"
    if len(clean) <= 80:
        return clean
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:10]
    return f"{clean[:69].rstrip(' -_')}-{digest}"
