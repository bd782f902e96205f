"""Document-level retrieval metrics over graded relevance, following trec_eval.

Relevance judgments come from a case's evidence: each evidence item names a document (its
locator's `document_id`, else its `reference_id`) and a grade (`metadata["relevance"]`,
1 when absent). Ranked documents come from the response: chunk hits map back to their
document and only a document's first occurrence counts. Cases without any positive
judgment are skipped, as trec_eval skips queries missing from the qrels.
"""

from __future__ import annotations

import math

from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse


def relevance_judgments(case: BenchmarkCase) -> dict[str, int]:
    """Map document id to relevance grade from the case's evidence (the highest grade wins)."""
    grades: dict[str, int] = {}
    for evidence in case.expected.evidence:
        doc = evidence.locator.get("document_id") or evidence.reference_id
        if doc is None:
            continue
        grade = int(evidence.metadata.get("relevance", 1))
        grades[str(doc)] = max(grade, grades.get(str(doc), grade))
    return grades


def ranked_documents(response: QueryResponse) -> list[str]:
    """Document ids in rank order, each kept at its first occurrence."""
    seen: dict[str, None] = {}
    for result in response.results:
        seen.setdefault(result.source.document_id, None)
    return list(seen)


def _check_k(k: int) -> int:
    if k <= 0:
        raise ValueError(f"k must be a positive integer, got {k}")
    return k


class NDCGAtK:
    """nDCG@k with trec_eval's gain (the grade itself) and log2(rank + 1) discount.

    `gain="exponential"` uses 2^grade - 1 instead (reported as `ndcg_exp@k`); the two agree
    for binary relevance.
    """

    def __init__(self, k: int = 10, gain: str = "linear") -> None:
        if gain not in ("linear", "exponential"):
            raise ValueError(f"gain must be 'linear' or 'exponential', got {gain!r}")
        self.k = _check_k(k)
        self.gain = gain

    @property
    def name(self) -> str:
        return f"ndcg@{self.k}" if self.gain == "linear" else f"ndcg_exp@{self.k}"

    def _gain(self, grade: int) -> float:
        return float(grade) if self.gain == "linear" else 2.0**grade - 1.0

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        grades = relevance_judgments(case)
        ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[: self.k]
        if not ideal:
            return EvaluationScore(
                name=self.name, value=None, skipped_reason="no relevant documents"
            )
        ranked = ranked_documents(response)[: self.k]
        dcg = sum(
            self._gain(grades[d]) / math.log2(i + 2)
            for i, d in enumerate(ranked)
            if grades.get(d, 0) > 0
        )
        idcg = sum(self._gain(g) / math.log2(i + 2) for i, g in enumerate(ideal))
        return EvaluationScore(name=self.name, value=dcg / idcg)


class RecallAtK:
    """Fraction of the relevant documents (grade > 0) ranked within the top k."""

    def __init__(self, k: int = 100) -> None:
        self.k = _check_k(k)

    @property
    def name(self) -> str:
        return f"recall@{self.k}"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        relevant = {d for d, g in relevance_judgments(case).items() if g > 0}
        if not relevant:
            return EvaluationScore(
                name=self.name, value=None, skipped_reason="no relevant documents"
            )
        found = relevant.intersection(ranked_documents(response)[: self.k])
        return EvaluationScore(name=self.name, value=len(found) / len(relevant))
