"""The console scripts as installed (pyproject's `[project.scripts]`, in the environment's bin
directory) start and answer `--help`; everything else calls their `main` in the test process."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ..conftest import REPO, user_env

SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]


# The installed script itself (its shebang, its import of the entry point) is a new process.
@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_the_installed_script_starts(script: str, tmp_path: Path) -> None:
    path = Path(sys.executable).parent / script
    assert path.is_file(), f"{script} is not installed in {path.parent}"
    proc = subprocess.run(
        [str(path), "--help"],
        cwd=tmp_path,
        env=user_env(PYTHONPATH=str(REPO), PYTHONWARNINGS="ignore::DeprecationWarning"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "usage" in proc.stdout.lower() or "== Configuration groups ==" in proc.stdout
