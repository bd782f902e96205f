"""What a sweep's configuration says about its parent run: its name, the keys the sweep
varies, the tracker it logs with, the suite it runs, the benchmark and recipe every job
shares."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from heta_eval.config.components import instantiate
from heta_eval.config.hydra_outputs import config_secrets, scrub_logs
from heta_eval.config.secrets import mask_override
from heta_eval.records.suite import suite_from_config
from heta_eval.results.sweep_ids import (
    KIND_TAG,
    SWEEP_ID_TAG,
    SWEEP_KIND,
    split_override,
    sweep_id,
)
from heta_eval.tracking.mlflow_tracker import MlflowTracker
from heta_eval.tracking.naming import MAX_RUN_NAME, metric_name, plain_override, short_overrides

ParentFields = tuple[str, set[str], list[str], dict[str, str], dict[str, str]]


def parent_fields(config: DictConfig, sweep_dir: Path, config_name: str | None) -> ParentFields:
    """(sweep id, swept keys, overrides (secrets masked), params, tags) of the sweep's parent
    run. Keys given on the command line are kept out of Hydra's log from here on."""
    task_overrides = [str(o) for o in config.hydra.overrides.task]
    sid = sweep_id(task_overrides, config_name)
    swept = swept_keys(sweeper_params(config) + task_overrides)
    # Hydra logs each job's overrides: keys given there stay out of the log.
    scrub_logs(config_secrets(config, task_overrides))
    task_overrides = [plain_override(mask_override(o)) for o in task_overrides]
    overrides = [mask_override(o) for o in sweeper_params(config)] + task_overrides
    choices = OmegaConf.select(config, "hydra.runtime.choices", default={}) or {}
    params = {
        "sweep.overrides": " ".join(task_overrides),
        "sweep.launcher": str(choices.get("hydra/launcher", "")),
        "sweep.sweeper": str(choices.get("hydra/sweeper", "")),
        **{metric_name(key): value for key, value in map(split_override, overrides)},
    }
    tags = {
        KIND_TAG: SWEEP_KIND,
        SWEEP_ID_TAG: sid,
        # This attempt's; the params keep the first attempt's.
        "heta_eval.launcher": params["sweep.launcher"],
        "heta_eval.sweeper": params["sweep.sweeper"],
        "heta_eval.sweep_dir": str(sweep_dir),
        "heta_eval.config_name": str(config_name or ""),
        **fixed_names(config, swept),
    }
    return sid, swept, overrides, params, tags


def parent_name(tags: Mapping[str, str], overrides: Sequence[str], swept: set[str]) -> str:
    """The sweep's parent run named by what it sweeps: `sweep sample/bm25 chunk_size=null,128`
    (`*` for a benchmark or recipe the sweep varies; locations left out)."""

    benchmark = tags.get("benchmark.name") or "*"
    recipe = tags.get("recipe.name") or "*"
    named = f"{benchmark}/{recipe}"
    varied = [o for o in overrides if split_override(o)[0] in swept]
    groups = [o for o in varied if split_override(o)[0] in ("benchmark", "recipe")]
    name = " ".join(["sweep", named, *groups, *short_overrides(varied, named)])
    return name if len(name) <= MAX_RUN_NAME else name[: MAX_RUN_NAME - 1] + "…"


def swept_keys(overrides: Sequence[str]) -> set[str]:
    """Keys (or config groups) that take more than one value in the sweep."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception:  # already parsed by Hydra; be conservative if not
        return {split_override(o)[0] for o in overrides}
    return {o.key_or_group for o in parsed if o.is_sweep_override()}


def sweeper_params(config: DictConfig) -> list[str]:
    """The sweeper's own search space (`hydra.sweeper.params`) as overrides."""
    params = OmegaConf.select(config, "hydra.sweeper.params")
    if not params:
        return []
    return [f"{k}={v}" for k, v in params.items()]


def mlflow_tracker(config: DictConfig) -> Any:
    """The sweep's MlflowTracker (for its parent run); None when it tracks otherwise."""
    from hydra.core.hydra_config import HydraConfig

    # Callbacks run before Hydra sets its config for the jobs; `${hydra:...}` needs it.
    HydraConfig.instance().set_config(config)
    spec = OmegaConf.to_container(config.tracking, resolve=True)
    if not isinstance(spec, dict) or not str(spec.get("_target_", "")).endswith("MlflowTracker"):
        return None
    tracker = instantiate(spec)
    return tracker if isinstance(tracker, MlflowTracker) else None


def suite(config: DictConfig) -> Any:
    """The suite a sweep runs (`suite=uda`: `conf/suite/uda.yaml`), or None."""

    spec = OmegaConf.select(config, "suite", default=None)
    if spec is None:
        return None
    return suite_from_config(OmegaConf.to_container(spec, resolve=True))


def fixed_names(config: DictConfig, swept: set[str]) -> dict[str, str]:
    """benchmark.name / recipe.name when no override of the sweep can change them."""
    names: dict[str, str] = {}

    def touched(*prefixes: str) -> bool:
        return any(k == p or k.startswith(p + ".") for k in swept for p in prefixes)

    if not touched("experiment") and not swept & {"recipe", "recipe.name"}:
        name = OmegaConf.select(config, "recipe.name", default=None)
        if name:
            names["recipe.name"] = str(name)
    if not touched("benchmark", "experiment"):
        # The adapter names itself (e.g. beir-scifact); constructing one reads no data.
        try:
            spec = OmegaConf.to_container(config.benchmark, resolve=True)
            names["benchmark.name"] = str(instantiate(spec).manifest.name)
        except Exception:
            choice = OmegaConf.select(config, "hydra.runtime.choices.benchmark", default=None)
            if choice:
                names["benchmark.name"] = str(choice)
    return names
