"""Keep secrets out of what Hydra writes: `.hydra/*.yaml`, `multirun.yaml` and log lines.

Hydra saves the composed config and the command line's overrides before our code runs, so a
key given on the command line (`+recipe.metadata.api_key=sk-...`) or resolved into the
config would stay on disk. `scrub_hydra_outputs` rewrites those files without the secret
values (values under secret-looking keys, see heta_eval.secrets) and adds a filter to the
log handlers that masks them in every later log line.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from heta_eval.secrets import is_secret_key, scrub, scrub_file, secret_values

HYDRA_FILES = ("config.yaml", "overrides.yaml", "hydra.yaml")


class ScrubSecrets(logging.Filter):
    """Masks secret values in log records that pass through a handler."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = frozenset(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = scrub(message, self.secrets)
        if clean != message:
            record.msg, record.args = clean, ()
        return True


def config_secrets(cfg: Any, overrides: Iterable[str]) -> set[str]:
    """Secret values of a composed config (resolved) and of the command line's overrides."""
    from heta_eval.assembly import resolve_config

    found = set()
    for override in overrides:
        key, _, value = str(override).partition("=")
        if value.strip() and is_secret_key(key.lstrip("+~")):
            found.add(value.strip().strip("'\""))
    with contextlib.suppress(Exception):  # a config that cannot resolve fails later, named
        found |= secret_values(resolve_config(cfg))
    return found


def scrub_logs(secrets: Iterable[str]) -> None:
    """Mask `secrets` in every later record of the root logger's handlers."""
    secrets = frozenset(secrets)
    if not secrets:
        return
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, ScrubSecrets) for f in handler.filters):
            handler.addFilter(ScrubSecrets(secrets))


def scrub_hydra_outputs(cfg: Any, hydra_cfg: Any) -> None:
    """Rewrite this job's `.hydra/` files (and the sweep's `multirun.yaml`) without secrets."""
    from hydra.types import RunMode

    secrets = config_secrets(cfg, hydra_cfg.overrides.task)
    if not secrets:
        return
    scrub_logs(secrets)
    files = []
    if hydra_cfg.output_subdir:
        subdir = Path(hydra_cfg.runtime.output_dir) / hydra_cfg.output_subdir
        files.extend(subdir / name for name in HYDRA_FILES)
    if hydra_cfg.mode == RunMode.MULTIRUN:
        files.append(Path(hydra_cfg.sweep.dir) / "multirun.yaml")
    for path in files:
        if path.is_file():
            scrub_file(path, secrets)
