"""Hydra callbacks that tests add to a sweep (`+hydra.callbacks.NAME._target_=...`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class DropLastLineAfterJob(Callback):
    """Remove the last line of the file `path` when sweep job `job` has ended: a data file
    that changes between two jobs of one sweep process."""

    def __init__(self, path: str, job: int) -> None:
        self.path = Path(path)
        self.job = job

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        if int(config.hydra.job.num) == self.job:
            lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
            self.path.write_text("".join(lines[:-1]), encoding="utf-8")


class ReplaceTextAfterJob(Callback):
    """Replace `old` by `new` in the file `path` when sweep job `job` has ended."""

    def __init__(self, path: str, job: int, old: str, new: str) -> None:
        self.path = Path(path)
        self.job = job
        self.old, self.new = old, new

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        if int(config.hydra.job.num) == self.job:
            text = self.path.read_text(encoding="utf-8")
            self.path.write_text(text.replace(self.old, self.new), encoding="utf-8")
