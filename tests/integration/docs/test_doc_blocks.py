"""Every shell and Python block of the README and the docs is run as written or says which
test runs it or why it is not run (see `tests/docs_blocks.py` for the markers). Python blocks
and shell blocks of console-script calls run here, in this process, each command as its
console script runs it; blocks that need a shell run in `tests/e2e/test_doc_shell_blocks.py`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ...cli_in_process import call_cli
from ...conftest import REPO
from ...docs_blocks import DocBlock, all_blocks, console_commands, marked_tests, sandbox

BLOCKS = all_blocks()
RUN_HERE = [
    b
    for b in BLOCKS
    if b.marker is None and (b.language == "python" or console_commands(b) is not None)
]
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


@pytest.mark.slow
@pytest.mark.parametrize("block", RUN_HERE, ids=lambda b: b.id)
def test_the_block_runs_as_written(
    block: DocBlock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cwd = sandbox(tmp_path)
    if "../shared/" in block.text and not (cwd.parent / "shared").exists():
        pytest.skip("the shared datasets are not beside the repository")
    monkeypatch.setenv("COLUMNS", "120")  # the terminal the docs' tables are made for
    if block.language == "python":
        monkeypatch.chdir(cwd)
        exec(compile(block.text, block.id, "exec"), {"__name__": "__main__"})
        return
    for program, *args in console_commands(block) or []:
        result = call_cli(program, args, cwd=cwd, monkeypatch=monkeypatch, capsys=capsys)
        assert result.returncode == 0, (
            f"{block.id}: {program} {' '.join(args)} exited {result.returncode}\n"
            f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
