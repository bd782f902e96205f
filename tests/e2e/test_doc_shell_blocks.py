"""The shell blocks of the README and the docs that need a shell (operators, redirections,
expansions, a command that is not one of ours) run as written in bash; the others run in the
test process (`tests/integration/docs/test_doc_blocks.py`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import REPO, user_env
from ..docs_blocks import DocBlock, all_blocks, console_commands, sandbox

SHELL_BLOCKS = [
    b
    for b in all_blocks()
    if b.marker is None and b.language == "bash" and console_commands(b) is None
]


def _env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return user_env(
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=pythonpath,
        COLUMNS="120",
        PYTHONWARNINGS="ignore::DeprecationWarning",
    )


# What a shell does (pipes, expansions, other programs) needs bash: a process of its own.
@pytest.mark.slow
@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=lambda b: b.id)
def test_the_shell_block_runs_as_written(block: DocBlock, tmp_path: Path) -> None:
    cwd = sandbox(tmp_path)
    if "../shared/" in block.text and not (cwd.parent / "shared").exists():
        pytest.skip("the shared datasets are not beside the repository")
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.text],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, (
        f"{block.id} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
