"""No name or path from an environment variable: `benchmark.name=${oc.env:OPENAI_API_KEY}`
would put the key into the run name, tags, params, reports, journal, caches and a directory
name. Such a config is refused before any work, the key and the variable named.

A path key may take an absolute path from the environment (`paths.root: ${oc.env:HOME}/out`):
that is a place, not a secret. A name key never may, nor a `_target_` (it names code) or a
query mode. Hydra's own names and paths (`hydra.job.name`, which names the log file,
`hydra.run.dir`) are checked by `RefuseEnvNames` before Hydra uses them. And a value from the
environment never appears in an error: `name_env_values` writes the key's text
(`${oc.env:NAME}`) where the value would be.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from hydra.experimental.callback import Callback

from heta_eval.config.resolve import ConfigError

_ENV = re.compile(r"\$\{oc\.env:\s*([^,}\s]+)")
_NAME = re.compile(r"(?:^|_)(?:name|id|split|version|dataset|subset|experiment)$")
_PATH = re.compile(r"(?:^|_)(?:path|paths|dir|root|file|filename|documents|cases|subdir)$")
_NAME_LISTS = frozenset({"query_modes", "modes"})
"""Keys of lists whose items are names (query modes)."""
_SHOWN_FROM = 6
"""A value from the environment this long is replaced wherever it stands in an error; a
shorter one only where it is quoted (a short bare value would hit unrelated words)."""


def _walk(cfg: Any, hydra: bool) -> list[tuple[str, Any, Any, Any]]:
    """(dotted key, parent node, key, raw value) of every leaf (the `hydra` subtree only
    when `hydra`)."""
    from omegaconf import OmegaConf

    leaves: list[tuple[str, Any, Any, Any]] = []

    def walk(node: Any, prefix: str) -> None:
        keys = list(node.keys()) if OmegaConf.is_dict(node) else list(range(len(node)))
        for key in keys:
            if key == "hydra" and not prefix and not hydra:
                continue
            dotted = f"{prefix}{key}"
            raw = node._get_node(key)
            if raw is not None and (OmegaConf.is_dict(raw) or OmegaConf.is_list(raw)):
                walk(raw, f"{dotted}.")
                continue
            leaves.append((dotted, node, key, raw._value() if raw is not None else None))

    if OmegaConf.is_dict(cfg) or OmegaConf.is_list(cfg):
        walk(cfg, "")
    return leaves


def _names_a_thing(dotted: str, key: Any) -> bool:
    """Whether the key at `dotted` is a name (not a path): `*_name`, `_target_`, a query
    mode in a `query_modes` or fusion `modes` list."""
    last = str(key).lower()
    if isinstance(key, int):
        parent = dotted.rsplit(".", 2)[-2] if dotted.count(".") else ""
        return parent in _NAME_LISTS
    return bool(_NAME.search(last)) or last in ("_target_", "query_mode")


def env_names_and_paths(cfg: Any, *, hydra: bool = False) -> dict[str, str]:
    """Dotted keys naming a name or a path whose value comes from an environment variable,
    each with the variable's name (an absolute path under a path key is left out)."""
    found: dict[str, str] = {}
    for dotted, node, key, value in _walk(cfg, hydra):
        names = _ENV.findall(value) if isinstance(value, str) else []
        if not names:
            continue
        is_name = _names_a_thing(dotted, key)
        if not is_name and not _PATH.search(str(key).lower()):
            continue
        if not is_name and value.startswith("${oc.env:") and _absolute(node, key):
            continue
        found[dotted] = names[0]
    return found


def _absolute(node: Any, key: Any) -> bool:
    try:
        return str(node[key]).startswith("/")
    except Exception:  # unresolvable: named when the config is resolved
        return False


def check_env_names(cfg: Any, *, hydra: bool = False) -> None:
    """Raise `ConfigError` naming every name or path key whose value comes from the
    environment (the value itself is never shown); Hydra's own keys too with `hydra`."""
    found = env_names_and_paths(cfg, hydra=hydra)
    if found:
        raise ConfigError(
            "\n".join(
                f"{key}: takes its value from the environment variable {var}; a value from "
                "the environment may be a secret and is never used as a name or a path "
                "(write the value itself)"
                for key, var in sorted(found.items())
            )
        )


def name_env_values(message: str, cfg: Any) -> str:
    """`message` with every value the config takes from the environment written as the
    config writes it (`'${oc.env:SOME_API_KEY}'`), never as the value itself."""
    shown: dict[str, str] = {}
    for _, node, key, value in _walk(cfg, hydra=True):
        names = _ENV.findall(value) if isinstance(value, str) else []
        if not names:
            continue
        for name in names:
            if os.environ.get(name, "").strip():
                shown.setdefault(os.environ[name], f"${{oc.env:{name}}}")
        try:
            resolved = str(node[key])
        except Exception:  # unresolvable: the error says so, naming the variable
            continue
        if resolved.strip():
            shown[resolved] = value
    for value in sorted(shown, key=len, reverse=True):
        message = message.replace(repr(value), repr(shown[value]))
        message = message.replace(f'"{value}"', f'"{shown[value]}"')
        if len(value) >= _SHOWN_FROM:
            message = message.replace(value, shown[value])
    return message


class RefuseEnvNames(Callback):
    """Hydra callback (`hydra.callbacks.env_names`): a name or a path from the environment,
    Hydra's own included (`hydra.job.name` names the log file, `hydra.run.dir` the run
    directory), is refused before Hydra creates either: the message, exit 2. (Hydra turns
    an exception of a callback into a warning and goes on: it exits instead.)"""

    def on_run_start(self, config: Any, **kwargs: Any) -> None:
        _refuse(config)

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        _refuse(config)


def _refuse(config: Any) -> None:
    try:
        check_env_names(config, hydra=True)
    except ConfigError as exc:
        print(f"heta-eval: invalid configuration\n{exc}", file=sys.stderr)
        sys.exit(2)
