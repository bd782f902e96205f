"""Labels that say what differs between compared runs: the overrides (or, failing that, the
config values) whose values are not the same in every run, e.g. `recipe=bm25` against
`recipe=bm25_fusion`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# Overrides that say where things go or how a run is executed, not what is evaluated (the
# same keys the run name and the config hash leave out).
NOT_SHOWN = (
    "paths.",
    "tracking",
    "hydra.",
    "hydra/",
    "runner.output_dir",
    "runner.store_dir",
    "runner.workspace_dir",
    "runner.cache_dir",
    "runner.state_dir",
    "runner.cache",
    "runner.workers",
    "runner.max_concurrent_queries",
    "runner.resume",
    "runner.progress",
    "runner.dry_run",
    "runner.strict",
    "runner.max_failure_rate",
    "optimized_metric",
)
# Config keys that shape results, used when the overrides do not tell runs apart.
RESULT_CONFIG = (
    "benchmark.",
    "recipe.",
    "evaluator.",
    "runner.top_k",
    "runner.query_modes",
    "runner.limit",
    "runner.seed",
    "runner.bootstrap_resamples",
    "runner.confidence",
)
MAX_CONFIG_KEYS = 3
NOT_SET = "(not set)"


def split_overrides(text: str) -> list[str]:
    """Overrides joined by spaces (the `heta_eval.overrides` tag) back into a list; spaces
    inside brackets, braces or quotes (`runner.query_modes=[bm25, fusion]`) do not split."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    quote = ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth = max(0, depth - 1)
        elif char.isspace() and depth == 0:
            if current:
                parts.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        parts.append("".join(current))
    return parts


def override_items(overrides: Sequence[str]) -> dict[str, str]:
    """`key=value` overrides as a mapping (`+key` and `++key` count as `key`; `~key`
    deletions and keys that say where things go are left out)."""
    items: dict[str, str] = {}
    for override in overrides:
        if override.startswith("~") or "=" not in override:
            continue
        key, _, value = override.partition("=")
        key = key.lstrip("+")
        if key.startswith(NOT_SHOWN) or key == "tracking":
            continue
        items[key] = value
    return items


def effective_value(key: str, overrides: Mapping[str, str], config: Mapping[str, str]) -> str:
    """A key's value in one run: its override, else its config value (a config group such as
    `recipe` by its `name`), else NOT_SET."""
    if key in overrides:
        return overrides[key]
    for candidate in (key, f"{key}.name"):
        if candidate in config:
            return config[candidate]
    return NOT_SET


def _differing(keys: Sequence[str], values: Sequence[Mapping[str, str]]) -> list[str]:
    return [k for k in keys if len({v[k] for v in values}) > 1]


def short_keys(keys: Sequence[str]) -> dict[str, str]:
    """Each key by its last part where no other key shares it (`recipe.chunk_size` is
    `chunk_size`; `recipe.indexes.bm25.k1` and `recipe.indexes.dense.k1` stay whole); a
    config group (`recipe`) keeps its name, and a group's `name` is the group's
    (`recipe.name` is `recipe`, as in `recipe=bm25`)."""
    tails = {
        k: k.removesuffix(".name") if k.endswith(".name") else k.rsplit(".", 1)[-1] for k in keys
    }
    counts: dict[str, int] = {}
    for tail in tails.values():
        counts[tail] = counts.get(tail, 0) + 1
    return {k: tail if counts[tail] == 1 else k for k, tail in tails.items()}


def _compose(keys: Sequence[str], values: Mapping[str, str]) -> str:
    names = short_keys(keys[:MAX_CONFIG_KEYS])
    shown = [f"{names[k]}={values[k]}" for k in keys[:MAX_CONFIG_KEYS]]
    if len(keys) > MAX_CONFIG_KEYS:
        shown.append(f"+{len(keys) - MAX_CONFIG_KEYS} more")
    return " ".join(shown)


def differing_labels(
    overrides: Sequence[Sequence[str]], configs: Sequence[Mapping[str, str]]
) -> list[str] | None:
    """One label per run naming what differs, or None when that does not tell every run
    apart. Overrides come first; the flattened config is used only when the runs' overrides
    are the same (e.g. reports written by the library API, which have none)."""
    items = [override_items(o) for o in overrides]
    keys = list(dict.fromkeys(k for run in items for k in run))
    values = [
        {k: effective_value(k, run, config) for k in keys}
        for run, config in zip(items, configs, strict=True)
    ]
    differing = _differing(keys, values)
    names = short_keys(differing)
    labels = [" ".join(f"{names[k]}={v[k]}" for k in differing) for v in values]
    if differing and len(set(labels)) == len(labels):
        return labels
    config_keys = [
        k
        for k in dict.fromkeys(k for config in configs for k in config)
        if k.startswith(RESULT_CONFIG) and not k.endswith(".description")
    ]
    config_values = [{k: c.get(k, NOT_SET) for k in config_keys} for c in configs]
    # Names (`recipe.name`) say most in the fewest characters: they come first.
    by_config = sorted(
        _differing(config_keys, config_values), key=lambda k: not k.endswith(".name")
    )
    if not by_config:
        return None
    labels = [
        " ".join(x for x in (label, _compose(by_config, v)) if x)
        for label, v in zip(labels, config_values, strict=True)
    ]
    return labels if len(set(labels)) == len(labels) else None
