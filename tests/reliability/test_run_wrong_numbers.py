"""Numbers that must never be wrong in silence: stale code, edited journals, doubled cases,
non-finite arguments and empty knowledge bases.

Real `heta-eval` subprocesses on real files; each test is an attack that once gave a wrong
number without a word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heta_eval.code_identity import external_sources

from ..conftest import REPO
from .conftest import jsonl_args, read_report, report_path, small_benchmark, write_jsonl
from .processes import run_cli

RECALL = "bm25.evidence_recall@1"


def _reused(proc: object) -> bool:
    return "already evaluated" in proc.stdout + proc.stderr  # type: ignore[attr-defined]


def test_an_edited_journal_line_is_evaluated_again_not_reported(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    args = ("tracking=none", "runner.limit=6")
    first = run_cli(root, tmp_path, *args)
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

    again = run_cli(root, tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert not _reused(again)
    assert "do not match their digest" in again.stdout + again.stderr
    report = read_report(report_path(again.stdout))
    assert report.run.resumed_cases == 2  # the lines in place and untouched are trusted
    assert report.score_summary[RECALL] == 1.0
    assert all(s.value != 0.123 for r in report.case_results for s in r.scores)


def test_a_query_mode_listed_twice_is_refused_not_scored_twice(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    for override in ("recipe.query_modes=[bm25,bm25]", "runner.query_modes=[bm25,bm25]"):
        proc = run_cli(root, tmp_path, "tracking=none", "runner.limit=4", override)
        assert proc.returncode != 0, proc.stdout
        key = override.partition("=")[0]
        assert f"{key}: ['bm25'] listed more than once" in proc.stderr
        assert not list(root.rglob("report.json"))


@pytest.mark.slow
def test_non_finite_component_arguments_are_refused_by_name(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    for value, shown in (("nan", "nan"), ("1e999", "inf"), ("-inf", "-inf")):
        proc = run_cli(root, tmp_path, "tracking=none", f"recipe.indexes.bm25.k1={value}")
        assert proc.returncode != 0, proc.stdout
        assert f"recipe.indexes.bm25.k1: a finite number is required (got {shown})" in (proc.stderr)
        assert not list(root.rglob("report.json"))
    # Inside a list or a mapping of an argument, before anything is created.
    nested = "evaluator.extra=[{_target_:my.Metric,weights:{a:[1,nan]}}]"
    proc = run_cli(root, tmp_path, "tracking=none", nested)
    assert "evaluator.extra[0].weights.a[1]: a finite number is required (got nan)" in (proc.stderr)


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
    tmp_path: Path, monkeypatch: object
) -> None:
    plugin = _user_package(tmp_path, 1.0)
    args = ("tracking=none", "runner.limit=4", "evaluator.extra=[{_target_:mycomp.ev2.Const2}]")
    env = {"PYTHONPATH": f"{plugin}:{REPO}"}
    root = tmp_path / "outputs"
    first = run_cli(root, tmp_path, *args, **env)
    assert first.returncode == 0, first.stderr
    assert read_report(report_path(first.stdout)).score_summary["bm25.const2"] == 1.0
    # Two imports away from the component, and only its value changes.
    (plugin / "mycomp" / "deeper.py").write_text("BASE = 0.25\n")
    again = run_cli(root, tmp_path, *args, **env)
    assert again.returncode == 0, again.stderr
    assert not _reused(again)
    assert read_report(report_path(again.stdout)).score_summary["bm25.const2"] == 0.25

    monkeypatch.syspath_prepend(str(plugin))  # type: ignore[attr-defined]
    digests = external_sources(["mycomp.ev2"])
    # The component's module and every module of its package it reaches (the package's
    # __init__ runs for `from mycomp import late`), and nothing installed such as numpy.
    assert set(digests) == {f"mycomp{m}" for m in ("", ".ev2", ".consts", ".deeper", ".late")}


@pytest.mark.slow
def test_a_knowledge_base_with_nothing_indexed_fails_its_cases_and_is_not_cached(
    tmp_path: Path,
) -> None:
    docs, cases = small_benchmark(tmp_path, cases=3)
    rows = [json.loads(line) for line in docs.read_text().splitlines()]
    for row in rows:
        row["media_type"] = "application/x-klingon"  # no parser reads it
    write_jsonl(docs, rows)
    root = tmp_path / "outputs"
    args = (*jsonl_args(docs, cases), "tracking=none")
    done = run_cli(root, tmp_path, *args)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "3 of 3 case results failed (all of them: 3 at build)" in done.stderr
    assert "nothing indexed: none of the 10 documents gave any text to index" in done.stderr
    report = read_report(done.report_path)
    message = report.case_results[0].error.message  # type: ignore[union-attr]
    assert "no parser for media type 'application/x-klingon'" in message
    errors = {r.error.error_type for r in report.case_results if r.error is not None}
    assert errors == {"EmptyKnowledgeBaseError"} and len(report.failed_cases) == 3
    assert "bm25.ndcg@10" not in report.score_summary
    assert not [p for p in (root / "cache" / "kb").glob("*/*") if not p.name.startswith(".")]
    again = run_cli(root, tmp_path, *args)
    assert again.returncode == 1 and not _reused(again)


def test_a_parser_target_that_is_not_a_parser_is_refused_up_front(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    chunker = "{_target_:heta_eval.kb.chunking.FixedSizeChunker}"
    for override in (f"recipe.parser={chunker}", f"+recipe.parser.parsers={{txt:{chunker}}}"):
        done = run_cli(root, tmp_path, "tracking=none", override)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "recipe.parser" in done.stderr
        assert "FixedSizeChunker is not a parser" in done.stderr
        assert "parse(source, data)" in done.stderr
    assert not list(root.rglob("report.json"))
