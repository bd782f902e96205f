"""Every job of a sweep validated before the sweep starts.

`ValidateSweepJobs` (configured as `hydra.callbacks.validate_jobs`, before the MLflow sweep
callback) composes the configuration of each job of a grid sweep (Hydra's basic sweeper)
and validates it as a single run would (`heta_eval.run.assembly.assemble`: no MLflow, no
index building). The first invalid job stops the sweep with exit 2 and the same message a
single run gives, naming the job's overrides, before any job runs and before the MLflow
parent run exists. Searches (Optuna) choose their jobs as they go: the configuration they
start from is checked (`optimized_metric` against the scores the run produces included).
"""

from __future__ import annotations

import copy
import sys
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, read_write

from heta_eval.config.resolve import ConfigError
from heta_eval.records.suite import suite_from_config
from heta_eval.run.assembly import assemble

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def sweep_jobs(config: DictConfig) -> list[list[str]]:
    """The overrides of every job of a basic sweep (sweeper params first, as Hydra does)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = OmegaConf.select(config, "hydra.sweeper.params", default=None) or {}
    arguments = [f"{key}={value}" for key, value in params.items()]
    arguments += [str(o) for o in config.hydra.overrides.task]
    parsed = OverridesParser.create().parse_overrides(arguments)
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def check_sweep(config: DictConfig) -> None:
    """Compose and validate every job; exit 2 with the first invalid job's message.

    Jobs that choose the same config groups share one composition: their value overrides
    (`a.b=v`, `+a.b=v`, `~a.b`) are applied to a copy of it, as Hydra applies them after
    composing, so a grid of hundreds of jobs is checked in seconds.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.override_parser.overrides_parser import OverridesParser

    loader = GlobalHydra.instance().config_loader()
    parser = OverridesParser.create()
    hydra_config = HydraConfig.instance()
    sweep_config = hydra_config.cfg
    composed: dict[tuple[str, ...], DictConfig] = {}
    # The sweep's own `${hydra:...}` (`paths.root` by default) resolves from it.
    hydra_config.set_config(copy.deepcopy(config))
    try:
        jobs = _suite_jobs(config)
        for number, overrides in enumerate(jobs):
            parsed = parser.parse_overrides(overrides)
            values = [o for o in parsed if "." in o.key_or_group and "/" not in o.key_or_group]
            choices = tuple(o.input_line for o in parsed if o not in values)
            if choices not in composed:
                composed[choices] = loader.load_sweep_config(config, list(choices))
            job_config = copy.deepcopy(composed[choices])
            with read_write(job_config):
                ConfigLoaderImpl._apply_overrides_to_config(values, job_config)
                # What the launcher sets when the job runs (not created here).
                job_config.hydra.runtime.output_dir = f"{config.hydra.sweep.dir}/{number}"
            hydra_config.set_config(job_config)  # `${hydra:...}` resolves as in the job
            try:
                assemble(job_config)
            except ConfigError as exc:
                print(
                    f"heta-eval: invalid configuration of sweep job {number} of {len(jobs)} "
                    f"({' '.join(overrides)}); no job was run\n{exc}",
                    file=sys.stderr,
                )
                sys.exit(2)
    finally:
        hydra_config.cfg = sweep_config


def _suite_jobs(config: DictConfig) -> list[list[str]]:
    """`sweep_jobs`, after checking the suite the sweep runs (`suite=...`): a value it needs
    (`suite.data_root`) or members it cannot find exit 2 with the reason, not a traceback."""
    from omegaconf.errors import InterpolationResolutionError, MissingMandatoryValue

    suite = OmegaConf.select(config, "suite", default=None)
    try:
        if suite is not None:
            for key in suite:
                if OmegaConf.is_missing(suite, key):
                    raise ValueError(f"suite.{key}: a value is required (set suite.{key}=...)")

            suite_from_config(OmegaConf.to_container(suite, resolve=True))
        return sweep_jobs(config)
    except (InterpolationResolutionError, MissingMandatoryValue) as exc:
        cause = exc.__cause__ or exc
        message = str(getattr(cause, "msg", None) or cause).splitlines()[0]
        message = message.removeprefix("SuiteDataError raised while resolving interpolation: ")
    except ValueError as exc:
        message = str(exc)
    print(f"heta-eval: invalid configuration\n{message}", file=sys.stderr)
    sys.exit(2)


def check_search(config: DictConfig) -> None:
    """A search (Optuna) chooses its jobs as it goes: validate the configuration it starts
    from (the command line's overrides, the search space at its defaults), `optimized_metric`
    against the scores the run produces included; exit 2 before the first trial."""
    from hydra.core.hydra_config import HydraConfig

    hydra_config = HydraConfig.instance()
    sweep_config = hydra_config.cfg
    base = copy.deepcopy(config)
    with read_write(base):
        base.hydra.runtime.output_dir = f"{config.hydra.sweep.dir}/0"
    hydra_config.set_config(base)
    try:
        if not base.get("optimized_metric"):
            raise ConfigError(
                "optimized_metric: a value is required by the hyperparameter search; set "
                "optimized_metric={query_mode}.{metric}, e.g. optimized_metric=bm25.ndcg@10"
            )
        assemble(base)
    except ConfigError as exc:
        print(
            f"heta-eval: invalid configuration of the search; no trial was run\n{exc}",
            file=sys.stderr,
        )
        sys.exit(2)
    finally:
        hydra_config.cfg = sweep_config


class ValidateSweepJobs(Callback):
    """Hydra callback: validate every job of a grid sweep, or the configuration a search
    starts from, before the first job starts."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        target = str(OmegaConf.select(config, "hydra.sweeper._target_", default="") or "")
        if target == BASIC_SWEEPER:
            check_sweep(config)
        elif "optuna" in target.lower():
            check_search(config)
