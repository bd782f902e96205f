"""Numbers that must never be wrong in silence: an edited journal, stale code (a module a
user's component imports, changed between runs).

Real `heta-eval` runs on real files; each test is an attack that once gave a wrong number
without a word. (Doubled query modes and non-finite arguments: test_config_*; an empty
knowledge base: test_run_case_failures.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from heta_eval.code_identity import external_sources

from ..cli_in_process import CliResult
from ..conftest import InProcessCli
from .conftest import forget_modules, read_report, report_path

RECALL = "bm25.evidence_recall@1"


def _reused(done: CliResult) -> bool:
    return "already evaluated" in done.stdout + done.stderr


def test_an_edited_journal_line_is_evaluated_again_not_reported(
    cli: InProcessCli, tmp_path: Path
) -> None:
    root = tmp_path / "outputs"
    args = ("tracking=none", "runner.limit=6")
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    assert read_report(report_path(first.stdout)).score_summary[RECALL] == 1.0
    (done,) = (root / "state").glob("*/done.json")
    done.unlink()  # as if killed after the last case: the next run resumes the journal
    journal = done.parent / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    cases = [i for i, line in enumerate(lines) if '"kind": "case"' in line]
    assert len(cases) == 6
    edited = lines[cases[0]].replace('"value":1.0', '"value":0.123', 1)
    assert edited != lines[cases[0]]
    lines[cases[0]] = edited
    # Two lines swapped: each is still a true line, in a place it was not written in (the
    # line after them no longer follows the line it was chained to either).
    lines[cases[2]], lines[cases[3]] = lines[cases[3]], lines[cases[2]]
    journal.write_text("".join(lines))

    again = cli(*args)
    assert again.returncode == 0, again.stderr
    assert not _reused(again)
    assert "do not match their digest" in again.stdout + again.stderr
    report = read_report(report_path(again.stdout))
    assert report.run.resumed_cases == 2  # the lines in place and untouched are trusted
    assert report.score_summary[RECALL] == 1.0
    assert all(s.value != 0.123 for r in report.case_results for s in r.scores)


_EVALUATOR = """
import numpy  # installed code: not the user's package, never walked

from heta_eval.protocols import Evaluator
from heta_eval.records import EvaluationScore

from .consts import VALUE


class Const2(Evaluator):
    name = "const2"

    async def evaluate(self, case, response):
        from mycomp import late  # imported only when it runs: still the user's code

        return EvaluationScore(name=self.name, value=VALUE * late.FACTOR)
"""


def _user_package(root: Path, value: float) -> Path:
    package = root / "plugin" / "mycomp"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "ev2.py").write_text(_EVALUATOR)
    (package / "consts.py").write_text("from mycomp.deeper import BASE\n\nVALUE = BASE\n")
    (package / "deeper.py").write_text(f"BASE = {value}\n")
    (package / "late.py").write_text("FACTOR = 1.0\n")
    return package.parent


@pytest.mark.slow
def test_a_module_a_user_component_imports_is_part_of_the_code_identity(
    cli: InProcessCli, tmp_path: Path, user_code: Callable[[Path], Path]
) -> None:
    plugin = user_code(_user_package(tmp_path, 1.0))
    args = ("tracking=none", "runner.limit=4", "evaluator.extra=[{_target_:mycomp.ev2.Const2}]")
    first = cli(*args)
    assert first.returncode == 0, first.stderr
    assert read_report(report_path(first.stdout)).score_summary["bm25.const2"] == 1.0
    # Two imports away from the component, and only its value changes; the user's next run
    # is a new process, which reads the package again.
    (plugin / "mycomp" / "deeper.py").write_text("BASE = 0.25\n")
    forget_modules(plugin)
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    assert not _reused(again)
    assert read_report(report_path(again.stdout)).score_summary["bm25.const2"] == 0.25

    digests = external_sources(["mycomp.ev2"])
    # The component's module and every module of its package it reaches (the package's
    # __init__ runs for `from mycomp import late`), and nothing installed such as numpy.
    assert set(digests) == {f"mycomp{m}" for m in ("", ".ev2", ".consts", ".deeper", ".late")}
