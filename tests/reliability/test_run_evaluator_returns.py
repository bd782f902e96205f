"""A user evaluator that returns the wrong type (issue 23, item 21): before, a list instead of
one `EvaluationScore` ended the whole run with a pydantic traceback. Now the case fails with
a message naming the evaluator, what it returned and what it must return; the run goes on
and every other metric of the case is kept.

The real CLI; the evaluators are the user's own package, imported from a directory of their
own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ..conftest import InProcessCli
from .conftest import jsonl_args, report_path, small_benchmark

USER_EVALUATORS = """
from heta_eval.protocols import Evaluator
from heta_eval.records import EvaluationScore


class ReturnsList(Evaluator):
    name = "listy"

    async def evaluate(self, case, response):
        if case.case_id == "q0":
            return EvaluationScore(name=self.name, value=1.0)
        return [EvaluationScore(name=self.name, value=1.0)] * 2


class ReturnsFloat(Evaluator):
    name = "floaty"

    async def evaluate(self, case, response):
        if case.case_id == "q0":
            return EvaluationScore(name=self.name, value=0.5)
        return 0.5
"""


def _user_evaluators(tmp_path: Path, user_code: Callable[[Path], Path]) -> None:
    package = tmp_path / "user" / "userevals"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "returns.py").write_text(USER_EVALUATORS)
    user_code(tmp_path / "user")


def test_a_wrong_return_fails_the_case_with_a_clear_message_and_the_run_goes_on(
    cli: InProcessCli, tmp_path: Path, user_code: Callable[[Path], Path]
) -> None:
    _user_evaluators(tmp_path, user_code)
    docs, cases = small_benchmark(tmp_path, cases=3)
    done = cli(
        *jsonl_args(docs, cases),
        "evaluator.extra=[{_target_: userevals.returns.ReturnsList}]",
        "runner.max_failure_rate=1",
        "tracking=none",
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "valid dictionary" not in done.stderr
    results = json.loads(report_path(done.stdout).read_text())["case_results"]
    by_case = {r["case_id"]: r for r in results}
    assert len(results) == 3 and by_case["q0"]["error"] is None
    for case in ("q1", "q2"):
        error = by_case[case]["error"]
        assert error["stage"] == "evaluate" and error["evaluator"] == "listy"
        assert error["message"] == (
            "evaluator 'listy' (userevals.returns.ReturnsList) returned a list of 2 "
            "EvaluationScore; evaluate() must return one heta_eval.records.EvaluationScore"
        )
        # The benchmark's own metrics of the failed case are kept.
        assert {s["name"] for s in by_case[case]["scores"]} >= {"ndcg@10"}


def test_a_number_instead_of_a_score_is_named_too(
    cli: InProcessCli, tmp_path: Path, user_code: Callable[[Path], Path]
) -> None:
    _user_evaluators(tmp_path, user_code)
    docs, cases = small_benchmark(tmp_path, cases=3)
    done = cli(
        *jsonl_args(docs, cases),
        "evaluator.extra=[{_target_: userevals.returns.ReturnsFloat}]",
        "runner.max_failure_rate=1",
        "tracking=none",
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(report_path(done.stdout).read_text())["case_results"]
    assert [(r["error"] or {}).get("message") for r in results] == [None] + [
        "evaluator 'floaty' (userevals.returns.ReturnsFloat) returned a float (0.5); "
        "evaluate() must return one heta_eval.records.EvaluationScore"
    ] * 2
