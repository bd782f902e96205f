"""The shell and Python blocks of the README and the docs, with what says how each is tested.

A block is run as it is written, unless the line right before its opening fence is a marker
(`tests/integration/docs/test_doc_blocks.py` runs the Python blocks and the shell blocks made
of console-script calls in its own process, `tests/e2e/test_doc_shell_blocks.py` the shell
blocks that need a shell):

- `<!-- run by: tests/test_x.py::test_name -->` (one or more, comma-separated): another
  test runs what the block shows, on the same code path;
- `<!-- not run: REASON -->`: the block needs what a test machine does not have (a SLURM
  cluster, a placeholder for your own run id, minutes of work), and the reason says so;
- `<!-- excerpt of: PATH -->`: the block abridges a file of the repository (its classes, with
  their bases, and its functions are that file's), and tests run that file.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from .cli_in_process import ENTRY_POINTS
from .conftest import REPO

FENCE = re.compile(r"^\s*```(\w*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*(run by|not run|excerpt of):\s*(.*?)\s*-->\s*$")
LANGUAGES = ("bash", "python")


@dataclass(frozen=True)
class DocBlock:
    """One fenced block of a Markdown page: where it is, its language, text and marker."""

    path: Path
    line: int
    language: str
    text: str
    marker: tuple[str, str] | None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def doc_pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[DocBlock]:
    """The bash and python blocks of one page."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[DocBlock] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not FENCE.match(lines[end]):
            end += 1
        language = opening.group(1)
        if language in LANGUAGES:
            marker = MARKER.match(lines[i - 1]) if i > 0 else None
            found.append(
                DocBlock(
                    path=path,
                    line=i + 1,
                    language=language,
                    text="\n".join(lines[i + 1 : end]) + "\n",
                    marker=(marker.group(1), marker.group(2)) if marker else None,
                )
            )
        i = end + 1
    return found


def all_blocks() -> list[DocBlock]:
    return [block for page in doc_pages() for block in blocks(page)]


def marked_tests(marker_value: str) -> list[str]:
    """The `tests/…py::name` entries of a `run by` marker."""
    return [entry.strip() for entry in marker_value.split(",") if entry.strip()]


# What only a shell does outside quotes: operators, redirections, expansions, globs, escapes,
# a variable set before the command.
SHELL_SYNTAX = re.compile(r"[|&;<>()$`*?~{}\\]|^\s*[A-Za-z_]\w*=")
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _needs_shell(line: str) -> bool:
    if any(c in q for q in re.findall(r'"[^"]*"', line) for c in "$`\\"):
        return True  # expanded inside double quotes
    bare = re.sub(r"(^|\s)#.*", "", QUOTED.sub("''", line))
    return bool(SHELL_SYNTAX.search(bare))


def console_commands(block: DocBlock) -> list[list[str]] | None:
    """The commands of a bash block, each as its argv, when every line calls a console script
    with plain arguments (comments and line continuations aside); None when it needs a shell."""
    commands = []
    for line in block.text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] not in ENTRY_POINTS or _needs_shell(line):
            return None
        commands.append(words)
    return commands


def sandbox(root: Path) -> Path:
    """A directory under `root` laid out like the repository beside `shared/` (examples/ and
    benchmarks/ linked), where a block's outputs are new; its path."""
    repo = root / "work" / "heta_eval"
    repo.mkdir(parents=True)
    for name in ("examples", "benchmarks"):
        (repo / name).symlink_to(REPO / name)
    shared = REPO.parent / "shared"
    if shared.is_dir():
        (root / "work" / "shared").symlink_to(shared)
    return repo
