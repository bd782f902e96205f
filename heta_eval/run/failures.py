"""When too many cases failed, a finished evaluation is still a failed run; and why they did."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from heta_eval.records import EvaluationCaseResult, EvaluationError, EvaluationReport

REASON_CHARS = 160  # one reason on one terminal line


class FailureRateExceededError(RuntimeError):
    """More case results failed than `runner.max_failure_rate` allows, or all of them did
    (the report is kept, and is `report`)."""

    def __init__(self, message: str, report: EvaluationReport | None = None) -> None:
        super().__init__(message)
        self.report = report


def failure_reasons(report: EvaluationReport, top: int = 3) -> list[tuple[int, str]]:
    """The `top` most frequent reasons case results failed, `(count, "stage: Type: message")`."""
    counts: Counter[str] = Counter()
    for result in report.failed_cases:
        assert result.error is not None
        message = " ".join(result.error.message.split())
        reason = f"{result.error.stage}: {result.error.error_type}: {message}"
        if len(reason) > REASON_CHARS:
            reason = reason[: REASON_CHARS - 1] + "…"
        counts[reason] += 1
    return [(count, reason) for reason, count in counts.most_common(top)]


def skipped_reasons(report: EvaluationReport, top: int = 3) -> dict[str, list[tuple[int, str]]]:
    """For each `{mode}.{metric}` with no score at all, its most frequent skip reasons."""
    unscored = {k for k, d in report.score_details.items() if d.mean is None}
    found: dict[str, Counter[str]] = {}
    for result in report.case_results:
        for score in result.scores:
            key = f"{result.query_mode}.{score.name}"
            if key in unscored and score.value is None:
                why = score.skipped_reason or ("undetermined" if score.undetermined else "")
                if why:
                    found.setdefault(key, Counter())[why] += 1
    return {
        key: [(count, why) for why, count in counts.most_common(top)]
        for key, counts in sorted(found.items())
    }


def check_failure_rate(report: EvaluationReport, max_failure_rate: float | None) -> None:
    """Raise FailureRateExceededError when every case result failed (whatever the setting)
    or the failed fraction exceeds `max_failure_rate` (None: only when all failed).

    The fraction is over case results (one per case and query mode).
    """
    total = len(report.case_results)
    failed = len(report.failed_cases)
    if total == 0 or failed == 0:
        return
    everything = failed == total
    if not everything:
        check_failed_metrics(report)
    if not everything and (max_failure_rate is None or failed / total <= max_failure_rate):
        return
    stages = Counter(r.error.stage for r in report.failed_cases if r.error is not None)
    by_stage = ", ".join(f"{n} at {stage}" for stage, n in sorted(stages.items()))
    reasons = "".join(f"\n  {n}x {why}" for n, why in failure_reasons(report))
    if everything:
        head = (
            f"{failed} of {total} case results failed (all of them: {by_stage}); nothing was "
            "scored, whatever runner.max_failure_rate says,"
        )
    else:
        head = (
            f"{failed} of {total} case results failed ({failed / total:.1%}: {by_stage}), "
            f"more than runner.max_failure_rate={max_failure_rate:g}; {total - failed} were "
            "scored"
        )
    raise FailureRateExceededError(
        f"{head} and the report was still written; most frequent reasons:{reasons}", report
    )


def check_failed_metrics(report: EvaluationReport) -> None:
    """Raise FailureRateExceededError when a metric raised for a case and scored none (an
    LLM judge whose endpoint is down or refuses the key, skipped where it does not apply):
    the run cannot stand for that metric, whatever runner.max_failure_rate says, even when
    the other metrics scored. Cases that failed before scoring (build, query) do not count
    against a metric."""
    own: dict[str, list[str]] = {}  # "{mode}.{metric}" -> its own failures' messages
    for result in report.failed_cases:
        assert result.error is not None
        if result.error.evaluator is not None:
            key = f"{result.query_mode}.{result.error.evaluator}"
            own.setdefault(key, []).append(" ".join(result.error.message.split()))
    dead = [
        key
        for key, detail in sorted(report.score_details.items())
        if key in own and not detail.scored and not detail.undetermined
    ]
    if not dead:
        return
    causes = Counter(message[:REASON_CHARS] for key in dead for message in own[key])
    reasons = "".join(f"\n  {n}x {why}" for why, n in causes.most_common(3))
    raise FailureRateExceededError(
        f"{', '.join(dead)} failed for every case it applies to (nothing scored, whatever "
        "runner.max_failure_rate says); the report was still written and the failed cases "
        f"are evaluated again on the next run; most frequent reasons:{reasons}",
        report,
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
