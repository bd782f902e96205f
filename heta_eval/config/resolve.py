"""The composed config as plain data: interpolations resolved, missing values named."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError, MissingMandatoryValue


class ConfigError(ValueError):
    """A configuration that cannot run; the message names the key and what was expected."""


def resolve_config(cfg: DictConfig) -> dict[str, Any]:
    """The config as plain data with interpolations resolved; missing values are named."""
    missing = sorted(k for k in _missing_keys(cfg))
    if missing:
        raise ConfigError(
            "\n".join(f"{key}: a value is required (set {key}=...)" for key in missing)
        )
    own = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    try:
        resolved = OmegaConf.to_container(own, resolve=True)
    except (MissingMandatoryValue, InterpolationResolutionError) as exc:
        raise ConfigError(f"{exc.full_key}: {exc.msg}") from None
    assert isinstance(resolved, dict)
    return resolved


def _missing_keys(cfg: Any, prefix: str = "") -> list[str]:
    keys: list[str] = []
    if OmegaConf.is_dict(cfg):
        for key in cfg:
            if key == "hydra" and not prefix:
                continue
            dotted = f"{prefix}{key}"
            if OmegaConf.is_missing(cfg, key):
                keys.append(dotted)
            else:
                keys.extend(_missing_keys(cfg._get_node(key), f"{dotted}."))
    return keys


def check_finite(resolved: Mapping[str, Any]) -> None:
    """Refuse NaN and infinities anywhere in the resolved config (`k1=nan`, `k1=1e999`):
    no component argument means them, and they would turn every score into 0.0 or NaN in
    silence (and be recorded as null). The error names every such key."""
    bad = [f"{key}: a finite number is required (got {value})" for key, value in _floats(resolved)]
    if bad:
        raise ConfigError("\n".join(bad))


def _floats(node: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _floats(value, f"{prefix}{key}.")
    elif isinstance(node, list | tuple):
        for i, value in enumerate(node):
            yield from _floats(value, f"{prefix.rstrip('.')}[{i}].")
    elif isinstance(node, float) and not math.isfinite(node):
        yield prefix.rstrip("."), node
