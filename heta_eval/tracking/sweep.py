"""Group the jobs of a Hydra multirun under one MLflow parent run."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)

PARENT_RUN_FILE = ".mlflow_parent_run_id"


def parent_run_id(sweep_dir: str | Path) -> str | None:
    """The parent run id the sweep callback left in `sweep_dir`, if any."""
    marker = Path(sweep_dir) / PARENT_RUN_FILE
    return marker.read_text(encoding="utf-8").strip() if marker.is_file() else None


def _mlflow_tracker(config: DictConfig) -> Any:
    from hydra.core.hydra_config import HydraConfig

    from heta_eval.components import instantiate
    from heta_eval.tracking.mlflow_tracker import MlflowTracker

    # Callbacks run before Hydra sets its config for the jobs; `${hydra:...}` needs it.
    HydraConfig.instance().set_config(config)
    spec = OmegaConf.to_container(config.tracking, resolve=True)
    if not isinstance(spec, dict) or not str(spec.get("_target_", "")).endswith("MlflowTracker"):
        return None
    tracker = instantiate(spec)
    return tracker if isinstance(tracker, MlflowTracker) else None


class MlflowSweepCallback(Callback):
    """Hydra callback: one MLflow parent run per multirun, closed when the sweep ends."""

    def __init__(self) -> None:
        self._tracker: Any = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        tracker = _mlflow_tracker(config)
        if tracker is None:
            return
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        overrides = list(config.hydra.overrides.task)
        tracker.start(
            run_name=f"sweep {sweep_dir.name}",
            config={"sweep.overrides": " ".join(overrides)},
            tags={"heta_eval.kind": "sweep", "heta_eval.sweep_dir": str(sweep_dir)},
        )
        (sweep_dir / PARENT_RUN_FILE).write_text(tracker.run_id, encoding="utf-8")
        self._tracker = tracker
        log.info("MLflow parent run %s for sweep %s", tracker.run_id, sweep_dir)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self._tracker is not None:
            self._tracker.end("FINISHED")
