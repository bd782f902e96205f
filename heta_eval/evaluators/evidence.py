"""Evidence metrics: did retrieval surface the labelled evidence?"""

from __future__ import annotations

from heta_eval.evaluators.matching import DEFAULT_MATCHER, EvidenceMatcher
from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse


class EvidenceRecallAtK:
    """Fraction of a case's evidence items matched by at least one of the top-k results.

    `matcher` decides what a match is (default: locator, then reference_id, then text; see
    `EvidenceMatcher`). Cases without evidence labels are skipped, not scored as zero.
    """

    def __init__(self, k: int = 10, matcher: EvidenceMatcher | None = None) -> None:
        if k <= 0:
            raise ValueError(f"k must be a positive integer, got {k}")
        self.k = k
        self.matcher = matcher or DEFAULT_MATCHER

    @property
    def name(self) -> str:
        return f"evidence_recall@{self.k}"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        evidence = case.expected.evidence
        if not evidence:
            return EvaluationScore(name=self.name, value=None, skipped_reason="no evidence labels")
        top = response.results[: self.k]
        found = [any(self.matcher.matches(e, r) for r in top) for e in evidence]
        return EvaluationScore(
            name=self.name,
            value=sum(found) / len(evidence),
            details={"found": sum(found), "evidence": len(evidence)},
        )
