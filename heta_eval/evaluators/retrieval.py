"""Document-level retrieval metrics over graded relevance, following trec_eval.

Relevance judgments come from a case's evidence: each evidence item names a document (its
locator's `document_id`, else its `reference_id`) and a grade (`metadata["relevance"]`,
1 when absent); a document is relevant when its grade is >= 1 (trec_eval's default
relevance level), and a judged document with grade <= 0 is judged non-relevant.

The ranking follows trec_eval exactly:
- duplicates: chunk hits map back to their document, which keeps its best (first) score,
  so a document never counts twice;
- ties: documents are ordered by score, descending, and equal scores by document id,
  descending (trec_eval's `comp_sim_docno`), whatever order the engine returned them in;
- missing queries: a case with no judgments at all is skipped (trec_eval evaluates only
  queries in the qrels); a case whose judgments are all non-relevant scores 0, as in
  trec_eval, and is averaged in;
- `k` larger than the ranking: the ranking is simply shorter (precision still divides by k).

The metric functions are pure: `(grades, ranked, k) -> float`. The judgments and the
ranking of a (case, response) are computed once and shared by every metric scoring it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from heta_eval.config.ranges import TOP_K_RANGE
from heta_eval.protocols import Evaluator
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
    """Document ids ranked as trec_eval ranks them (see the module docstring)."""
    best: dict[str, float] = {}
    for result in response.results:
        doc = result.source.document_id
        if doc not in best or result.score > best[doc]:
            best[doc] = result.score
    # Two stable sorts: document id descending, then score descending.
    ordered = sorted(best, reverse=True)
    ordered.sort(key=best.__getitem__, reverse=True)
    return ordered


_SHARED: dict[
    tuple[int, int, bool],
    tuple[BenchmarkCase, QueryResponse, Mapping[str, int], tuple[str, ...]],
] = {}
_SHARED_SIZE = 16  # only the case being scored is looked up again


def judged_ranking(
    case: BenchmarkCase, response: QueryResponse, ignore_identical_ids: bool = False
) -> tuple[Mapping[str, int], tuple[str, ...]]:
    """The case's judgments and the response's document ranking (read-only), computed once
    per (case, response) and shared by the metrics that score it one after the other.

    With `ignore_identical_ids`, a document whose id is the case id is dropped from both.
    """
    key = (id(case), id(response), ignore_identical_ids)
    shared = _SHARED.get(key)
    if shared is not None and shared[0] is case and shared[1] is response:
        return shared[2], shared[3]
    grades = relevance_judgments(case)
    ranked = ranked_documents(response)
    if ignore_identical_ids:
        grades = {d: g for d, g in grades.items() if d != case.case_id}
        ranked = [d for d in ranked if d != case.case_id]
    result = (MappingProxyType(grades), tuple(ranked))
    if len(_SHARED) >= _SHARED_SIZE:
        _SHARED.clear()
    _SHARED[key] = (case, response, *result)
    return result


def ndcg_at_k(
    grades: Mapping[str, int], ranked: Sequence[str], k: int, exponential: bool = False
) -> float:
    """nDCG@k: gain = grade (trec_eval) or 2^grade - 1, discount log2(rank + 1)."""

    def gain(grade: int) -> float:
        return 2.0**grade - 1.0 if exponential else float(grade)

    dcg = sum(
        gain(grades[d]) / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if grades.get(d, 0) > 0
    )
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    idcg = sum(gain(g) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(grades: Mapping[str, int], ranked: Sequence[str], k: int) -> float:
    """Relevant documents within the top k, over all relevant documents."""
    relevant = {d for d, g in grades.items() if g > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def precision_at_k(grades: Mapping[str, int], ranked: Sequence[str], k: int) -> float:
    """Relevant documents within the top k, over k (trec_eval's P_k: short runs are not
    rewarded, the denominator stays k)."""
    return sum(1 for d in ranked[:k] if grades.get(d, 0) > 0) / k


def average_precision_at_k(grades: Mapping[str, int], ranked: Sequence[str], k: int) -> float:
    """AP@k (trec_eval's map_cut_k): precision at each relevant rank within k, summed, over
    the number of relevant documents (all of them, not only those within k)."""
    relevant = sum(1 for g in grades.values() if g > 0)
    if not relevant:
        return 0.0
    hits = 0
    total = 0.0
    for i, doc in enumerate(ranked[:k]):
        if grades.get(doc, 0) > 0:
            hits += 1
            total += hits / (i + 1)
    return total / relevant


def reciprocal_rank_at_k(grades: Mapping[str, int], ranked: Sequence[str], k: int) -> float:
    """1 / rank of the first relevant document within the top k, 0 when there is none."""
    for i, doc in enumerate(ranked[:k]):
        if grades.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def r_precision(grades: Mapping[str, int], ranked: Sequence[str]) -> float:
    """Precision at rank R, where R is the number of relevant documents (trec_eval's Rprec)."""
    relevant = sum(1 for g in grades.values() if g > 0)
    return precision_at_k(grades, ranked, relevant) if relevant else 0.0


def success_at_k(grades: Mapping[str, int], ranked: Sequence[str], k: int) -> float:
    """1 when any relevant document is within the top k (Hit@k), else 0."""
    return float(any(grades.get(d, 0) > 0 for d in ranked[:k]))


class _DocumentMetric(Evaluator):
    """Shared shape of the document-level metrics: judgments, ranking, skip rule."""

    prefix = ""

    def __init__(self, k: int = 10, ignore_identical_ids: bool = False) -> None:
        TOP_K_RANGE.check("k", k)
        self.k = k
        self.ignore_identical_ids = ignore_identical_ids

    @property
    def name(self) -> str:
        return f"{self.prefix}@{self.k}"

    def compute(self, grades: Mapping[str, int], ranked: Sequence[str]) -> float:
        raise NotImplementedError

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        grades, ranked = judged_ranking(case, response, self.ignore_identical_ids)
        if not grades:
            return EvaluationScore(name=self.name, value=None, skipped_reason="no judgments")
        if not any(g > 0 for g in grades.values()):
            # Judged, none relevant: trec_eval scores such a query 0 and averages it in.
            return EvaluationScore(name=self.name, value=0.0, details={"relevant": 0})
        return EvaluationScore(name=self.name, value=self.compute(grades, ranked))


class NDCGAtK(_DocumentMetric):
    """nDCG@k with trec_eval's gain (the grade itself) and log2(rank + 1) discount.

    `gain="exponential"` uses 2^grade - 1 instead (reported as `ndcg_exp@k`, the form some
    libraries use); the two agree for binary relevance. `ignore_identical_ids` drops a
    retrieved or judged document whose id equals the case id (BEIR's convention).
    """

    def __init__(self, k: int = 10, gain: str = "linear", ignore_identical_ids: bool = False):
        if gain not in ("linear", "exponential"):
            raise ValueError(f"gain must be 'linear' or 'exponential', got {gain!r}")
        super().__init__(k, ignore_identical_ids)
        self.gain = gain
        self.prefix = "ndcg" if gain == "linear" else "ndcg_exp"

    def compute(self, grades: Mapping[str, int], ranked: Sequence[str]) -> float:
        return ndcg_at_k(grades, ranked, self.k, exponential=self.gain == "exponential")


class RecallAtK(_DocumentMetric):
    """Fraction of the relevant documents ranked within the top k."""

    prefix = "recall"

    def compute(self, grades: Mapping[str, int], ranked: Sequence[str]) -> float:
        return recall_at_k(grades, ranked, self.k)


class PrecisionAtK(_DocumentMetric):
    """Relevant documents within the top k divided by k (trec_eval's P_k)."""

    prefix = "precision"

    def compute(self, grades: Mapping[str, int], ranked: Sequence[str]) -> float:
        return precision_at_k(grades, ranked, self.k)


class MAPAtK(_DocumentMetric):
    """Average precision cut at k (trec_eval's map_cut_k), averaged over cases as MAP@k."""

    prefix = "map"

    def compute(self, grades: Mapping[str, int], ranked: Sequence[str]) -> float:
        return average_precision_at_k(grades, ranked, self.k)


class MRRAtK(_DocumentMetric):
    """Reciprocal rank of the first relevant document within k (BEIR's MRR@k)."""

    prefix = "mrr"

    def compute(self, grades: Mapping[str, int], ranked: Sequence[str]) -> float:
        return reciprocal_rank_at_k(grades, ranked, self.k)


class SuccessAtK(_DocumentMetric):
    """1 when a relevant document is within the top k (Success@k, also called Hit@k)."""

    prefix = "success"

    def compute(self, grades: Mapping[str, int], ranked: Sequence[str]) -> float:
        return success_at_k(grades, ranked, self.k)


class RPrecision(_DocumentMetric):
    """Precision at rank R, R being the case's number of relevant documents (R-precision)."""

    def __init__(self, ignore_identical_ids: bool = False) -> None:
        super().__init__(k=1, ignore_identical_ids=ignore_identical_ids)

    @property
    def name(self) -> str:
        return "r_precision"

    def compute(self, grades: Mapping[str, int], ranked: Sequence[str]) -> float:
        return r_precision(grades, ranked)


RETRIEVAL_METRICS: dict[str, type[_DocumentMetric]] = {
    "ndcg": NDCGAtK,
    "recall": RecallAtK,
    "precision": PrecisionAtK,
    "map": MAPAtK,
    "mrr": MRRAtK,
    "success": SuccessAtK,
}


def retrieval_metrics(
    metrics: Sequence[str] = ("ndcg", "recall"),
    ks: Sequence[int] = (10,),
    ignore_identical_ids: bool = False,
) -> list[_DocumentMetric]:
    """One evaluator per (metric, k), for configs such as `metrics: [ndcg, map]`, `ks: [10, 100]`.

    Names: ndcg, recall, precision, map, mrr, success, and r_precision (which has no k).
    """
    unknown = [m for m in metrics if m not in RETRIEVAL_METRICS and m != "r_precision"]
    if unknown:
        raise ValueError(
            f"unknown retrieval metrics {unknown}; known: {[*RETRIEVAL_METRICS, 'r_precision']}"
        )
    chosen: list[_DocumentMetric] = []
    for metric in metrics:
        if metric == "r_precision":
            chosen.append(RPrecision(ignore_identical_ids=ignore_identical_ids))
            continue
        for k in ks:
            chosen.append(RETRIEVAL_METRICS[metric](k=k, ignore_identical_ids=ignore_identical_ids))
    return chosen
