"""No name or path from an environment variable: `benchmark.name=${oc.env:OPENAI_API_KEY}`
would put the key into the run name, tags, params, reports, journal, caches and a directory
name. Such a config is refused before any work, the key and the variable named.

A path key may take an absolute path from the environment (`paths.root: ${oc.env:HOME}/out`):
that is a place, not a secret. A name key never may.
"""

from __future__ import annotations

import re
from typing import Any

from heta_eval.config.resolve import ConfigError

_ENV = re.compile(r"\$\{oc\.env:\s*([^,}\s]+)")
_NAME = re.compile(r"(?:^|_)(?:name|id|split|version|dataset|subset|experiment)$")
_PATH = re.compile(r"(?:^|_)(?:path|paths|dir|root|file|documents|cases|subdir)$")


def env_names_and_paths(cfg: Any) -> dict[str, str]:
    """Dotted keys naming a name or a path whose value comes from an environment variable,
    each with the variable's name (an absolute path under a path key is left out)."""
    from omegaconf import OmegaConf

    found: dict[str, str] = {}

    def walk(node: Any, prefix: str) -> None:
        keys = list(node.keys()) if OmegaConf.is_dict(node) else list(range(len(node)))
        for key in keys:
            if key == "hydra" and not prefix:
                continue
            dotted = f"{prefix}{key}"
            raw = node._get_node(key)
            if raw is not None and (OmegaConf.is_dict(raw) or OmegaConf.is_list(raw)):
                walk(raw, f"{dotted}.")
                continue
            value = raw._value() if raw is not None else None
            names = _ENV.findall(value) if isinstance(value, str) else []
            last = str(key).lower()
            if not names or not (_NAME.search(last) or _PATH.search(last)):
                continue
            if not _NAME.search(last) and value.startswith("${oc.env:") and _absolute(node, key):
                continue
            found[dotted] = names[0]

    if OmegaConf.is_dict(cfg) or OmegaConf.is_list(cfg):
        walk(cfg, "")
    return found


def _absolute(node: Any, key: Any) -> bool:
    try:
        return str(node[key]).startswith("/")
    except Exception:  # unresolvable: named when the config is resolved
        return False


def check_env_names(cfg: Any) -> None:
    """Raise `ConfigError` naming every name or path key whose value comes from the
    environment (the value itself is never shown)."""
    found = env_names_and_paths(cfg)
    if found:
        raise ConfigError(
            "\n".join(
                f"{key}: takes its value from the environment variable {var}; a value from "
                "the environment may be a secret and is never used as a name or a path "
                "(write the value itself)"
                for key, var in sorted(found.items())
            )
        )
