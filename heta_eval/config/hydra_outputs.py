"""Keep secrets out of what Hydra writes: `.hydra/*.yaml`, `multirun.yaml` and log lines.

Hydra saves the composed config and the command line's overrides before our code runs, so a
key given on the command line (`+recipe.metadata.api_key=sk-...`) or resolved into the
config would stay on disk. `scrub_hydra_outputs` rewrites those files without the secret
values (values under secret-looking keys, see heta_eval.config.secrets), and masks them in every
later log line of the process.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from heta_eval.config.resolve import resolve_config
from heta_eval.config.secrets import (
    env_secret_values,
    interpolated_env_values,
    is_secret_path,
    scrub,
    scrub_file,
    secret_values,
    url_passwords,
)

log = logging.getLogger(__name__)

HYDRA_FILES = ("config.yaml", "overrides.yaml", "hydra.yaml")


_scrubbed: set[str] = set()  # secrets masked in log records of this process


def _scrubbing_factory(make: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        if _scrubbed:
            message = record.getMessage()
            clean = scrub(message, _scrubbed)
            if clean != message:
                record.msg, record.args = clean, ()
        return record

    factory.heta_eval_scrubs = True  # type: ignore[attr-defined]
    return factory


def config_secrets(cfg: Any, overrides: Iterable[str]) -> set[str]:
    """Secret values of a composed config (resolved, with its `${oc.env:...}` values), of
    the command line's overrides, and of secret-named environment variables."""

    found = env_secret_values()
    for override in overrides:
        key, _, value = str(override).partition("=")
        found |= url_passwords(value)
        if value.strip() and is_secret_path(key):
            found.add(value.strip().strip("'\""))
    with contextlib.suppress(Exception):  # a config that cannot resolve fails later, named
        found |= secret_values(resolve_config(cfg))
    with contextlib.suppress(Exception):
        found |= interpolated_env_values(cfg)
    return found


def scrub_logs(secrets: Iterable[str]) -> None:
    """Mask `secrets` in every later log record of this process.

    A record factory, not a handler filter: Hydra reconfigures the handlers for each job
    and its launchers log each job's overrides."""
    _scrubbed.update(secrets)
    current = logging.getLogRecordFactory()
    if _scrubbed and not getattr(current, "heta_eval_scrubs", False):
        logging.setLogRecordFactory(_scrubbing_factory(current))


def scrub_hydra_outputs(cfg: Any, hydra_cfg: Any) -> None:
    """Rewrite this job's `.hydra/` files (and the sweep's `multirun.yaml`) without secrets."""
    from hydra.types import RunMode

    secrets = config_secrets(cfg, hydra_cfg.overrides.task)
    if not secrets:
        return
    scrub_logs(secrets)
    try:
        files = []
        if hydra_cfg.output_subdir:
            subdir = Path(hydra_cfg.runtime.output_dir) / hydra_cfg.output_subdir
            files.extend(subdir / name for name in HYDRA_FILES)
        if hydra_cfg.mode == RunMode.MULTIRUN:
            files.append(Path(hydra_cfg.sweep.dir) / "multirun.yaml")
        for path in files:
            if path.is_file():
                scrub_file(path, secrets)
    except Exception as exc:  # e.g. a composed config without a run directory (compose API)
        log.warning("could not scrub secrets from Hydra's output files: %s", exc)
