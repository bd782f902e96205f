"""When too many cases failed, a finished evaluation is still a failed run."""

from __future__ import annotations

from heta_eval.records import EvaluationReport


class FailureRateExceededError(RuntimeError):
    """More case results failed than `runner.max_failure_rate` allows (the report is kept)."""


def check_failure_rate(report: EvaluationReport, max_failure_rate: float | None) -> None:
    """Raise FailureRateExceededError when the failed fraction exceeds `max_failure_rate`.

    The fraction is over case results (one per case and query mode); None never fails.
    """
    total = len(report.case_results)
    if max_failure_rate is None or total == 0:
        return
    failed = len(report.failed_cases)
    if failed / total > max_failure_rate:
        stages: dict[str, int] = {}
        for result in report.failed_cases:
            assert result.error is not None
            stages[result.error.stage] = stages.get(result.error.stage, 0) + 1
        by_stage = ", ".join(f"{n} at {stage}" for stage, n in sorted(stages.items()))
        raise FailureRateExceededError(
            f"{failed} of {total} case results failed ({failed / total:.1%}: {by_stage}), "
            f"more than runner.max_failure_rate={max_failure_rate:g}; {total - failed} were "
            "scored and the report was still written"
        )
