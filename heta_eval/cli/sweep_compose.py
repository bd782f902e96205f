"""A sweep's job configurations composed once, not twice, while their files are unchanged.

Hydra composes every job of a grid sweep twice in the launching process: its basic sweeper
composes each job up front to refuse a bad one early (`validate_batch_is_legal`), and the
launcher composes each again just before the job runs, a few tenths of a second a job on
SciFact's sweeps (between one job's evaluation and the next). `keep_compositions` wraps the
sweep's config loader so that the launcher's call for the same job (the same master config
and overrides) takes a copy of the configuration the sweeper composed, when none of the
files that composition read (the config files, the directories searched: `run.file_reads`)
changed since; otherwise, or when they could not be verified, Hydra composes it again as it
would. Each kept configuration serves once and is dropped.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig

from heta_eval.run.file_reads import FileReads, watch_reads

log = logging.getLogger(__name__)

_WRAPPED = "_heta_eval_keeps_compositions"


def keep_compositions(loader: Any) -> None:
    """Wrap `loader.load_sweep_config` (Hydra's config loader of this process) once."""
    if getattr(loader, _WRAPPED, False):
        return
    compose: Callable[[DictConfig, list[str]], DictConfig] = loader.load_sweep_config
    kept: dict[tuple[int, tuple[str, ...]], tuple[DictConfig, DictConfig, FileReads]] = {}
    lock = threading.Lock()

    def load_sweep_config(master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        key = (id(master_config), tuple(sweep_overrides))
        with lock:
            found = kept.pop(key, None)
        if found is not None:
            master, config, reads = found
            if master is master_config and reads.changed() is None:
                return copy.deepcopy(config)
            log.debug("composing %s again: a file it read changed", list(sweep_overrides))
        with watch_reads() as reads:
            config = compose(master_config=master_config, sweep_overrides=sweep_overrides)
        if reads.unverifiable is None:
            with lock:
                kept[key] = (master_config, copy.deepcopy(config), reads)
        return config

    loader.load_sweep_config = load_sweep_config
    setattr(loader, _WRAPPED, True)
