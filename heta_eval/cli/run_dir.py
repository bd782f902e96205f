"""A run refused before it began leaves nothing behind.

Hydra creates the run directory (`.hydra/` and an empty `heta_eval.log`) before the command
runs; a configuration that fails validation would leave it, empty, one per attempt.
`discard_unused_run_dir` removes it, and the directories above it that it leaves empty, up
to and including `paths.root`, but only when nothing was written there (a log with content,
a report or any other file keeps the directory).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from pathlib import Path

HYDRA_DIR = ".hydra"
LOG_FILE = "heta_eval.log"


def _unused(run_dir: Path) -> bool:
    for entry in run_dir.iterdir():
        if entry.name == HYDRA_DIR and entry.is_dir():
            continue
        if entry.name == LOG_FILE and entry.is_file() and not entry.read_text().strip():
            continue
        return False
    return True


def _close_log_files(run_dir: Path) -> None:
    """Close the logging handlers writing into `run_dir` (Hydra's job log)."""
    for handler in list(logging.getLogger().handlers):
        filename = getattr(handler, "baseFilename", None)
        if filename and Path(filename).resolve().is_relative_to(run_dir):
            logging.getLogger().removeHandler(handler)
            handler.close()


def discard_unused_run_dir(run_dir: str | Path, root: str | Path | None) -> bool:
    """Remove `run_dir` when nothing but Hydra's files and an empty log is in it, then its
    parents left empty up to `root`; True when removed."""
    path = Path(run_dir).resolve()
    if not path.is_dir() or not _unused(path):
        return False
    _close_log_files(path)
    if not _unused(path):  # the closed handler flushed something after all
        return False
    shutil.rmtree(path, ignore_errors=True)
    top = Path(root).resolve() if root else path.parent
    parent = path.parent
    while parent != parent.parent and parent.is_relative_to(top):
        with contextlib.suppress(OSError):
            parent.rmdir()  # only when empty
        if parent.exists() or parent == top:
            break
        parent = parent.parent
    return True
