"""Metrics that cannot fail: a top k that holds the whole knowledge base.

When a knowledge base holds at most k retrievable items, its top k is all of it (whatever the
ranking), so an evidence metric that does not look at the order of the top k (evidence
recall, precision and all-evidence@k, UDA's evidence match@k) measures what the knowledge
base holds, never the retrieval. Such a case is skipped with `exhaustive_reason(k)`, decided
per case from `QueryResponse.scope` (which the runner attaches; without it nothing is
skipped). Order-sensitive metrics (nDCG, MRR) still discriminate and are kept; the
document-level metrics of `retrieval` follow trec_eval, which scores every query, and are
never skipped for size.
"""

from __future__ import annotations

from heta_eval.records import EvaluationScore, QueryResponse


def exhaustive_reason(k: int) -> str:
    """The skip reason of an order-insensitive metric at `k`."""
    return (
        f"cannot discriminate: the knowledge base holds at most {k} retrievable items, "
        f"so its top {k} is all of it"
    )


def exhaustive_skip(name: str, response: QueryResponse, k: int) -> EvaluationScore | None:
    """The skipped score of metric `name` when the response's knowledge base holds at most
    `k` retrievable items, else None."""
    scope = response.scope
    if scope is None or scope.items is None or scope.items > k:
        return None
    return EvaluationScore(
        name=name, value=None, skipped_reason=exhaustive_reason(k), details={"items": scope.items}
    )
