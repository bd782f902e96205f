"""A score named like another evaluator's metric (issue 36, item 2): a user evaluator named
`wrongname` that returned `EvaluationScore(name="ndcg@10")` gave each case two `ndcg@10`
values; report.json's summary said 1.0 and `heta-eval-compare` 0.0 for the same run, exit 0.
Now an evaluator may only return scores of the name it declares: the case fails at
`evaluate`, naming both evaluators, and keeps one `ndcg@10`, the metric's own."""

from __future__ import annotations

from pathlib import Path

import heta_eval
from heta_eval.protocols import Evaluator
from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse


class TakesAnotherName(Evaluator):
    """Scores 1.0 under the name of the benchmark's nDCG@10 for every other case."""

    name = "wrongname"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        clash = int(case.case_id[-1]) % 2 == 1
        return EvaluationScore(name="ndcg@10" if clash else self.name, value=1.0)


class NamesItsOwn(Evaluator):
    """Returns a name no evaluator declares for every other case."""

    name = "declared"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        odd = int(case.case_id[-1]) % 2 == 1
        return EvaluationScore(name="undeclared" if odd else self.name, value=1.0)


def _run(tmp_path: Path, target: str) -> heta_eval.EvaluationReport:
    return heta_eval.evaluate(
        overrides=[
            f"paths.root={tmp_path / 'outputs'}",
            "tracking=none",
            "runner.limit=6",
            "runner.max_failure_rate=1",
            f"evaluator.extra=[{{_target_: {__name__}.{target}}}]",
        ]
    )


def test_a_score_named_like_another_metric_fails_the_case_naming_both(tmp_path: Path) -> None:
    report = _run(tmp_path, "TakesAnotherName")
    failed = [r for r in report.case_results if r.error is not None]
    assert failed and len(failed) < len(report.case_results)
    for result in report.case_results:
        names = [s.name for s in result.scores]
        assert len(names) == len(set(names)), names  # one value per metric
    for result in failed:
        assert result.error.stage == "evaluate" and result.error.evaluator == "wrongname"
        assert result.error.message == (
            f"evaluator 'wrongname' ({__name__}.TakesAnotherName) returned a score named "
            "'ndcg@10', the name of evaluator 'ndcg@10' "
            "(heta_eval.evaluators.retrieval.NDCGAtK); an evaluator may only return scores "
            "named as it declares ('wrongname')"
        )
    # The summary is the metric's own mean, as a comparison reads the case results.
    own = [s.value for r in report.case_results for s in r.scores if s.name == "ndcg@10"]
    assert len(own) == len(report.case_results)
    assert report.score_summary["bm25.ndcg@10"] == sum(own) / len(own)


def test_a_score_of_a_name_no_evaluator_declares_fails_the_case(tmp_path: Path) -> None:
    report = _run(tmp_path, "NamesItsOwn")
    failed = [r for r in report.case_results if r.error is not None]
    assert failed and failed[0].error.message == (
        f"evaluator 'declared' ({__name__}.NamesItsOwn) returned a score named 'undeclared'; "
        "an evaluator may only return scores named as it declares ('declared')"
    )
    assert "bm25.undeclared" not in report.score_summary
