"""How a sweep is found: its id, the tags of its parent run, and the files the launching
process leaves in the sweep directory for its jobs (the parent run's id, the sweep's id, the
keys it varies)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

PARENT_RUN_FILE = ".mlflow_parent_run_id"
SWEEP_ID_FILE = ".heta_eval_sweep_id"
SWEPT_KEYS_FILE = ".heta_eval_swept_keys.json"

KIND_TAG = "heta_eval.kind"
SWEEP_KIND = "sweep"
SWEEP_ID_TAG = "heta_eval.sweep_id"


def parent_run_id(sweep_dir: str | Path) -> str | None:
    """The parent run id the sweep callback left in `sweep_dir`, if any."""
    marker = Path(sweep_dir) / PARENT_RUN_FILE
    return marker.read_text(encoding="utf-8").strip() if marker.is_file() else None


def read_sweep_id(sweep_dir: str | Path) -> str | None:
    """The `heta_eval.sweep_id` of the sweep writing to `sweep_dir`, if it is tracked."""
    marker = Path(sweep_dir) / SWEEP_ID_FILE
    return marker.read_text(encoding="utf-8").strip() if marker.is_file() else None


def sweep_id(overrides: Iterable[str], config_name: str | None) -> str:
    """Stable id of a sweep: sha256 of the config name and its sorted overrides, 16 hex digits.

    `overrides` are the command line's (`hydra.overrides.task`), so the same command gives the
    same id whatever the launcher, the order of the overrides or the time it runs.
    """
    text = "\n".join([config_name or "", *sorted(overrides)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_swept_keys(sweep_dir: str | Path) -> list[str]:
    """The keys (or groups) the sweep writing to `sweep_dir` varies, if it is tracked."""
    marker = Path(sweep_dir) / SWEPT_KEYS_FILE
    try:
        keys = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [str(k) for k in keys] if isinstance(keys, list) else []


def swept_first(overrides: Sequence[str], swept: Iterable[str]) -> list[str]:
    """`overrides` with those of the `swept` keys first (the rest in their order)."""
    keys = set(swept)
    return sorted(overrides, key=lambda o: split_override(o)[0] not in keys)


def split_override(override: str) -> tuple[str, str]:
    """`key=value` as (key without Hydra's `+`/`~` prefix, value)."""
    key, _, value = override.partition("=")
    return key.lstrip("+~"), value
