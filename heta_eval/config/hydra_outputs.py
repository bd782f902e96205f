"""Keep secrets out of what Hydra writes and logs: `.hydra/*.yaml`, `multirun.yaml`, log lines.

Hydra saves the composed config and the command line's overrides (`.hydra/config.yaml`,
`hydra.yaml`, `overrides.yaml`) before our code runs. `mask_hydra_outputs` makes Hydra
write them from a masked copy of the config (values under secret-looking keys, see
heta_eval.config.secrets, and secret-named `KEY=VALUE`s inside strings such as
`hydra.job.override_dirname`): a secret is never on disk, not even for a moment, and YAML
folding a long value over two lines cannot hide it from the masking. The sweep's
`multirun.yaml`, which Hydra's sweeper writes itself, is rewritten from its parsed content,
masked the same way, when the first job starts. Every log record of the process is masked
from the start (Hydra's launcher logs each job's overrides: `#0 : ... password=***`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from heta_eval.config.resolve import resolve_config
from heta_eval.config.secrets import (
    MASK,
    env_secret_values,
    interpolated_env_values,
    is_secret_key,
    is_secret_path,
    mask_override,
    mask_text,
    secret_values,
    url_passwords,
)
from heta_eval.files import write_atomically

log = logging.getLogger(__name__)

_scrubbed: set[str] = set()  # secrets masked in log records of this process


def _masking_factory(make: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit: logging reports it
            return record
        clean = mask_text(message, _scrubbed)
        if clean != message:
            record.msg, record.args = clean, ()
        return record

    factory.heta_eval_scrubs = True  # type: ignore[attr-defined]
    return factory


def override_secrets(overrides: Iterable[str]) -> set[str]:
    """Secret values given in command-line overrides: values of secret-named keys and URL
    passwords."""
    found: set[str] = set()
    for override in overrides:
        key, _, value = str(override).partition("=")
        found |= url_passwords(value)
        if value.strip() and is_secret_path(key):
            found.add(value.strip().strip("'\""))
    return found


def config_secrets(cfg: Any, overrides: Iterable[str]) -> set[str]:
    """Secret values of a composed config (resolved, with its `${oc.env:...}` values), of
    the command line's overrides, and of secret-named environment variables."""

    found = env_secret_values() | override_secrets(overrides)
    with contextlib.suppress(Exception):  # a config that cannot resolve fails later, named
        found |= secret_values(resolve_config(cfg))
    with contextlib.suppress(Exception):
        found |= interpolated_env_values(cfg)
    return found


def scrub_logs(secrets: Iterable[str] = ()) -> None:
    """Mask `secrets`, and secret-named `KEY=VALUE`s and credentials, in every later log
    record of this process.

    A record factory, not a handler filter: Hydra reconfigures the handlers for each job
    and its launchers log each job's overrides."""
    _scrubbed.update(secrets)
    current = logging.getLogRecordFactory()
    if not getattr(current, "heta_eval_scrubs", False):
        logging.setLogRecordFactory(_masking_factory(current))


def masked_tree(value: Any, secrets: set[str]) -> Any:
    """A copy of a config's plain data (unresolved) with every secret masked: values under
    secret-named keys, overrides (`key=value`) and free text in strings."""
    if isinstance(value, Mapping):
        return {
            k: (
                MASK
                if is_secret_key(str(k)) and v not in (None, "", {}, [])
                else masked_tree(v, secrets)
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [masked_tree(v, secrets) for v in value]
    if isinstance(value, str):
        return mask_text(mask_override(value, secrets), secrets)
    return value


def _task_overrides() -> list[str]:
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    return [str(o) for o in HydraConfig.get().overrides.task]


def masked_yaml(cfg: Any, overrides: Iterable[str] = ()) -> str:
    """`cfg` as YAML (interpolations unresolved, as Hydra writes it), secrets masked."""
    secrets = env_secret_values() | override_secrets(overrides) | _scrubbed
    data = OmegaConf.to_container(cfg, resolve=False) if OmegaConf.is_config(cfg) else cfg
    return OmegaConf.to_yaml(OmegaConf.create(masked_tree(data, secrets)))


def _save_masked(cfg: Any, filename: str, output_dir: Path) -> None:
    """Hydra's `_save_config` (`.hydra/config.yaml`, `hydra.yaml`, `overrides.yaml`), masked."""
    overrides = _task_overrides()
    scrub_logs(override_secrets(overrides))
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / filename).write_text(masked_yaml(cfg, overrides), encoding="utf-8")


def mask_hydra_outputs(argv: Iterable[str] = ()) -> None:
    """Before Hydra runs: every log record masked (with the secrets of `argv`, the command
    line), and Hydra's `.hydra/*.yaml` written masked. Hydra offers no hook before it saves
    them, so its saving function is replaced (once; a Hydra without it is left alone, and
    `scrub_hydra_outputs` rewrites the files)."""
    scrub_logs(override_secrets(a for a in argv if not a.startswith("-")))
    try:
        from hydra.core import utils
    except ImportError:
        return
    if callable(getattr(utils, "_save_config", None)):
        utils._save_config = _save_masked  # type: ignore[attr-defined]


def _rewrite_masked(path: Path, overrides: Iterable[str]) -> None:
    text = path.read_text(encoding="utf-8")
    masked = masked_yaml(OmegaConf.load(path), overrides)
    if masked != text:
        write_atomically(path, masked)


def scrub_hydra_outputs(cfg: Any, hydra_cfg: Any) -> None:
    """Mask this job's secrets in every later log line, and rewrite what Hydra wrote
    without our saving function (the sweep's `multirun.yaml`; `.hydra/*.yaml` when Hydra
    had no `_save_config` to replace) from its parsed content, masked."""
    from hydra.core import utils
    from hydra.types import RunMode

    overrides = [str(o) for o in hydra_cfg.overrides.task]
    scrub_logs(config_secrets(cfg, overrides))
    try:
        files = []
        if hydra_cfg.output_subdir and utils.__dict__.get("_save_config") is not _save_masked:
            subdir = Path(hydra_cfg.runtime.output_dir) / hydra_cfg.output_subdir
            files.extend(subdir / name for name in ("config.yaml", "overrides.yaml", "hydra.yaml"))
        if hydra_cfg.mode == RunMode.MULTIRUN:
            files.append(Path(hydra_cfg.sweep.dir) / "multirun.yaml")
        for path in files:
            if path.is_file():
                _rewrite_masked(path, overrides)
    except Exception as exc:  # e.g. a composed config without a run directory (compose API)
        log.warning("could not mask secrets in Hydra's output files: %s", exc)
