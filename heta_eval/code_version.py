"""Which code produced a result: the package version and, in a git checkout, the commit."""

from __future__ import annotations

import functools
import subprocess
from importlib import metadata
from pathlib import Path


@functools.cache
def git_commit() -> str | None:
    """The commit of the heta_eval checkout, or None outside git."""
    try:
        out = subprocess.run(
            ["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def code_version() -> str:
    """`{version}+{commit}`: part of resume and build-cache keys, so new code recomputes."""
    try:
        version = metadata.version("heta-eval")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"{version}+{git_commit() or 'nogit'}"
