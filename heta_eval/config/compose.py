"""Compose the packaged configuration from overrides, outside a Hydra app (the library API).

Inside `heta-eval`, Hydra composes the config and sets the run directory; a notebook or a
script calling `heta_eval.evaluate(overrides=[...])` gets the same composition here, with
`${hydra:runtime.cwd}` the current directory and `${hydra:runtime.output_dir}` a new run
directory made from `hydra.run.dir`, exactly as the CLI would choose it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from heta_eval.config import config_dir
from heta_eval.config.resolvers import register as register_resolvers

register_resolvers()  # the suites' ${heta_join:...} and ${heta_beir_datasets:...}


def compose_config(
    overrides: Sequence[str] = (), *, config_name: str = "config", directory: Path | None = None
) -> DictConfig:
    """The composed config for `overrides` (Hydra syntax), ready for `assemble`."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(
        config_dir=str(directory or config_dir()), version_base="1.3", job_name="heta_eval"
    ):
        cfg = compose(config_name, overrides=list(overrides), return_hydra_config=True)
    with read_write(cfg.hydra), open_dict(cfg.hydra):
        cfg.hydra.runtime.cwd = os.getcwd()
    HydraConfig.instance().set_config(cfg)  # `hydra.run.dir` may use ${hydra:...}
    run_dir = Path(str(OmegaConf.select(cfg, "hydra.run.dir"))).resolve()
    with read_write(cfg.hydra), open_dict(cfg.hydra):
        cfg.hydra.runtime.output_dir = str(run_dir)
    HydraConfig.instance().set_config(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    return cfg
