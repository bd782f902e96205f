"""Every shell and Python block of the README and the docs is run, as written, or says which
test runs it or why it is not run (see `tests/docs_blocks.py` for the markers)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, user_env
from .docs_blocks import DocBlock, all_blocks, marked_tests

BLOCKS = all_blocks()
RUN_HERE = [b for b in BLOCKS if b.marker is None]
# Text that only a reader can fill in: a run id, a date, an elision, a host of theirs.
PLACEHOLDER = re.compile(r"<[a-z][^>]*>|\.\.\.|…|example\.(?:org|com)|mlflow-host|db-host")


def test_the_pages_have_blocks_of_every_kind() -> None:
    kinds = {(b.language, b.marker[0] if b.marker else "run here") for b in BLOCKS}
    assert {("bash", "run here"), ("bash", "run by"), ("bash", "not run")} <= kinds


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_every_block_is_run_or_says_why_not(block: DocBlock) -> None:
    if block.marker is None:
        assert not PLACEHOLDER.search(block.text), (
            f"{block.id}: a block with a placeholder cannot run as written; mark it "
            "<!-- run by: tests/...::test_... --> or <!-- not run: why -->"
        )
        return
    kind, value = block.marker
    if kind == "not run":
        assert len(value) >= 10, f"{block.id}: say why the block is not run"
        return
    if kind == "excerpt of":
        _check_excerpt(block, REPO / value)
        return
    for entry in marked_tests(value):
        module, _, name = entry.partition("::")
        source = REPO / module
        assert source.is_file(), f"{block.id}: {module} does not exist"
        assert re.search(rf"^(async )?def {re.escape(name)}\(", source.read_text(), re.M), (
            f"{block.id}: {module} has no test {name}"
        )


def _check_excerpt(block: DocBlock, source: Path) -> None:
    """The excerpt's class lines (with their bases) are the file's, and so are its functions."""
    assert source.is_file(), f"{block.id}: {source} does not exist"
    text = source.read_text(encoding="utf-8")
    lines = {line.strip() for line in text.splitlines()}
    for line in block.text.splitlines():
        code = line.split("  #")[0].strip()
        if code.startswith("class "):
            assert code in lines, f"{block.id}: {source.name} has no line {code!r}"
        function = re.match(r"(?:async )?def (\w+)\(", code)
        if function:
            assert re.search(rf"def {function.group(1)}\(", text), (
                f"{block.id}: {source.name} has no function {function.group(1)}"
            )


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """A directory laid out like the repository beside `shared/`, where outputs are new."""
    repo = tmp_path / "work" / "heta_eval"
    repo.mkdir(parents=True)
    for name in ("examples", "benchmarks"):
        (repo / name).symlink_to(REPO / name)
    shared = REPO.parent / "shared"
    if shared.is_dir():
        (tmp_path / "work" / "shared").symlink_to(shared)
    return repo


def _env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return user_env(
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=pythonpath,
        COLUMNS="120",
        PYTHONWARNINGS="ignore::DeprecationWarning",
    )


@pytest.mark.slow
@pytest.mark.parametrize("block", RUN_HERE, ids=lambda b: b.id)
def test_the_block_runs_as_written(block: DocBlock, sandbox: Path) -> None:
    if "../shared/" in block.text and not (sandbox.parent / "shared").exists():
        pytest.skip("the shared datasets are not beside the repository")
    if block.language == "bash":
        command = ["bash", "-euo", "pipefail", "-c", block.text]
    else:
        command = [sys.executable, "-c", block.text]
    proc = subprocess.run(
        command, cwd=sandbox, env=_env(), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, (
        f"{block.id} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
