"""How heta_eval names things in trackers: MLflow-safe metric names and flat params."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from heta_eval.secrets import mask_secrets

MAX_PARAM_VALUE = 6000  # MLflow's limit on a param value
_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /]")


def metric_name(name: str) -> str:
    """MLflow-safe form of a metric name: `bm25.ndcg@10` becomes `bm25.ndcg_at_10`.

    MLflow accepts letters, digits, `_ - . /` and spaces; `@` is spelled `_at_` and anything
    else becomes `_`.
    """
    return _UNSAFE.sub("_", name.replace("@", "_at_"))


def flatten(config: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Yield (dotted key, leaf value) pairs of a nested mapping; lists stay whole."""
    for key, value in config.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from flatten(value, f"{dotted}.")
        else:
            yield dotted, value


def param_value(value: Any) -> str:
    """Text of a param value, cut to MLflow's limit with a visible marker."""
    text = "null" if value is None else str(value)
    if len(text) > MAX_PARAM_VALUE:
        marker = "...[truncated]"
        text = text[: MAX_PARAM_VALUE - len(marker)] + marker
    return text


def flat_params(config: Mapping[str, Any]) -> dict[str, str]:
    """Flattened, secret-masked, length-safe params for a resolved config."""
    return {key: param_value(value) for key, value in flatten(mask_secrets(config))}
