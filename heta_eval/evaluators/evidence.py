"""Evidence metrics below the document: did retrieval surface the labelled evidence?

Evidence items (pages, chunks, table rows, facts) are matched against the top-k results by
an `EvidenceMatcher` (locator, reference, text, or locator and text). Items graded
`metadata["relevance"] <= 0` are "judged not relevant" and are not evidence. Cases without
evidence are skipped, not scored as zero. The results keep the engine's order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from heta_eval.config.ranges import TOP_K_RANGE
from heta_eval.evaluators.exhaustive import exhaustive_skip
from heta_eval.evaluators.matching import DEFAULT_MATCHER, EvidenceMatcher
from heta_eval.protocols import Evaluator
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkEvidence,
    EvaluationScore,
    QueryResponse,
    QueryResult,
)


def labelled_evidence(case: BenchmarkCase) -> tuple[BenchmarkEvidence, ...]:
    """The case's evidence items that count as evidence (relevance > 0, default 1)."""
    return tuple(e for e in case.expected.evidence if int(e.metadata.get("relevance", 1)) > 0)


def match_matrix(
    evidence: Sequence[BenchmarkEvidence],
    results: Sequence[QueryResult],
    matcher: EvidenceMatcher,
) -> list[list[bool]]:
    """`matrix[i][j]`: whether result i supports evidence item j."""
    return [[matcher.matches(e, r) for e in evidence] for r in results]


class _EvidenceMetric(Evaluator):
    """Shared shape: top-k results, the matcher, and the skip rules (an order-insensitive
    metric is skipped when the knowledge base holds at most k retrievable items)."""

    prefix = ""
    order_sensitive = True

    def __init__(self, k: int = 10, matcher: EvidenceMatcher | None = None) -> None:
        TOP_K_RANGE.check("k", k)
        self.k = k
        self.matcher = matcher or DEFAULT_MATCHER

    @property
    def name(self) -> str:
        return f"{self.prefix}@{self.k}"

    def compute(self, matrix: list[list[bool]], evidence_count: int) -> float:
        raise NotImplementedError

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        evidence = labelled_evidence(case)
        if not evidence:
            return EvaluationScore(name=self.name, value=None, skipped_reason="no evidence labels")
        if (
            not self.order_sensitive
            and (skipped := exhaustive_skip(self.name, response, self.k)) is not None
        ):
            return skipped
        matrix = match_matrix(evidence, response.results[: self.k], self.matcher)
        found = sum(any(row[j] for row in matrix) for j in range(len(evidence)))
        return EvaluationScore(
            name=self.name,
            value=self.compute(matrix, len(evidence)),
            details={"found": found, "evidence": len(evidence)},
        )


class EvidenceRecallAtK(_EvidenceMetric):
    """Fraction of the evidence items matched by at least one of the top-k results."""

    prefix = "evidence_recall"
    order_sensitive = False

    def compute(self, matrix: list[list[bool]], evidence_count: int) -> float:
        return sum(any(row[j] for row in matrix) for j in range(evidence_count)) / evidence_count


class EvidencePrecisionAtK(_EvidenceMetric):
    """Fraction of the top-k positions holding a result that supports some evidence item
    (divided by k, as trec_eval's P@k, so short result lists are not rewarded)."""

    prefix = "evidence_precision"
    order_sensitive = False

    def compute(self, matrix: list[list[bool]], evidence_count: int) -> float:
        return sum(any(row) for row in matrix) / self.k


class EvidenceNDCGAtK(_EvidenceMetric):
    """nDCG@k with binary gains: a result gains 1 when it supports an evidence item that no
    higher-ranked result supported (each item counts once); the ideal ranking puts
    min(k, number of items) supporting results first."""

    prefix = "evidence_ndcg"

    def compute(self, matrix: list[list[bool]], evidence_count: int) -> float:
        covered: set[int] = set()
        dcg = 0.0
        for rank, row in enumerate(matrix):
            new = {j for j, hit in enumerate(row) if hit} - covered
            if new:
                dcg += 1.0 / math.log2(rank + 2)
                covered |= new
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(self.k, evidence_count)))
        return dcg / ideal


class EvidenceMRRAtK(_EvidenceMetric):
    """1 / rank of the first top-k result that supports any evidence item, else 0."""

    prefix = "evidence_mrr"

    def compute(self, matrix: list[list[bool]], evidence_count: int) -> float:
        for rank, row in enumerate(matrix):
            if any(row):
                return 1.0 / (rank + 1)
        return 0.0


class AllEvidenceAtK(_EvidenceMetric):
    """1 when every evidence item is supported within the top k (multi-hop: all facts)."""

    prefix = "all_evidence"
    order_sensitive = False

    def compute(self, matrix: list[list[bool]], evidence_count: int) -> float:
        return float(all(any(row[j] for row in matrix) for j in range(evidence_count)))


EVIDENCE_METRICS: dict[str, type[_EvidenceMetric]] = {
    "recall": EvidenceRecallAtK,
    "precision": EvidencePrecisionAtK,
    "ndcg": EvidenceNDCGAtK,
    "mrr": EvidenceMRRAtK,
    "all": AllEvidenceAtK,
}


def evidence_metrics(
    metrics: Sequence[str] = ("recall",),
    ks: Sequence[int] = (5,),
    matcher: EvidenceMatcher | None = None,
) -> list[_EvidenceMetric]:
    """One evaluator per (metric, k): metrics among recall, precision, ndcg, mrr, all."""
    unknown = [m for m in metrics if m not in EVIDENCE_METRICS]
    if unknown:
        raise ValueError(f"unknown evidence metrics {unknown}; known: {list(EVIDENCE_METRICS)}")
    return [EVIDENCE_METRICS[m](k=k, matcher=matcher) for m in metrics for k in ks]
