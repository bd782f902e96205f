"""How a retrieved result is matched against an evidence label."""

from __future__ import annotations

import re

from heta_eval.records import BenchmarkEvidence, QueryResult

LOCATOR_FIELDS = (
    "document_id",
    "source_key",
    "page_index",
    "chunk_id",
    "table_id",
    "row_index",
    "column",
)
"""Locator fields the built-in matcher understands; other locator keys are ignored."""

_SPACE = re.compile(r"\s+")


def normalize_space(text: str) -> str:
    """Lower-case and collapse runs of whitespace, for containment tests."""
    return _SPACE.sub(" ", text).strip().lower()


def _same(expected: object, actual: object) -> bool:
    # Locators come from JSON and may spell 4 as "4"; compare by text.
    return actual is not None and str(expected) == str(actual)


def evidence_matches(evidence: BenchmarkEvidence, result: QueryResult) -> bool:
    """Whether `result` supports `evidence`.

    The locator is used when it names any known field (all of them must agree with the
    result's provenance); otherwise `reference_id` must equal the result id, its chunk id
    or its document id; otherwise the evidence text must occur in the result's text
    (case- and whitespace-insensitive).
    """
    known = {k: v for k, v in evidence.locator.items() if k in LOCATOR_FIELDS}
    if known:
        source = result.source
        return all(_same(v, getattr(source, k)) for k, v in known.items())
    if evidence.reference_id:
        return evidence.reference_id in (
            result.id,
            result.source.chunk_id,
            result.source.document_id,
        )
    if evidence.text:
        return normalize_space(evidence.text) in normalize_space(result.text)
    return False
