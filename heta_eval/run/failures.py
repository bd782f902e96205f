"""When too many cases failed, a finished evaluation is still a failed run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from heta_eval.records import EvaluationCaseResult, EvaluationError, EvaluationReport


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


def fail_cases_with_lost_evidence(
    results: Sequence[EvaluationCaseResult], lost: Mapping[str, str]
) -> list[EvaluationCaseResult]:
    """`results` with each scored case whose evidence names a document that could not be
    stored (`lost`: document id -> why) turned into a failure that says so: such a case was
    never answerable, and a 0 would count against the recipe."""
    if not lost:
        return list(results)
    out = []
    for result in results:
        named = [] if result.expected is None else result.expected.evidence
        missing = [
            str(e.locator["document_id"])
            for e in named
            if str(e.locator.get("document_id")) in lost
        ]
        if result.error is None and missing:
            document = missing[0]
            error = EvaluationError(
                stage="build",
                error_type="EvidenceDocumentLost",
                message=(
                    f"evidence document {document!r} could not be stored, so the case cannot "
                    f"be scored: {lost[document]}"
                )[:2000],
            )
            result = result.model_copy(update={"scores": (), "error": error})
        out.append(result)
    return out
