"""How a retrieved result is matched against an evidence label."""

from __future__ import annotations

import re
from typing import Literal

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

MatchMode = Literal["auto", "locator", "reference", "text", "locator_and_text"]

_SPACE = re.compile(r"\s+")
_TOKEN = re.compile(r"\w+")


def normalize_space(text: str) -> str:
    """Lower-case and collapse runs of whitespace, for containment tests."""
    return _SPACE.sub(" ", text).strip().lower()


def _same(expected: object, actual: object) -> bool:
    # Locators come from JSON and may spell 4 as "4"; compare by text.
    return actual is not None and str(expected) == str(actual)


def locator_matches(evidence: BenchmarkEvidence, result: QueryResult) -> bool | None:
    """Whether every known locator field agrees with the result; None when none is given."""
    known = {k: v for k, v in evidence.locator.items() if k in LOCATOR_FIELDS}
    if not known:
        return None
    return all(_same(v, getattr(result.source, k)) for k, v in known.items())


def reference_matches(evidence: BenchmarkEvidence, result: QueryResult) -> bool | None:
    """Whether `reference_id` names the result, its chunk or its document; None without one."""
    if not evidence.reference_id:
        return None
    return evidence.reference_id in (result.id, result.source.chunk_id, result.source.document_id)


def text_overlap(evidence_text: str, result_text: str) -> float:
    """Fraction of the evidence's word tokens that occur in the result (case-insensitive)."""
    wanted = _TOKEN.findall(evidence_text.lower())
    if not wanted:
        return 0.0
    present = set(_TOKEN.findall(result_text.lower()))
    return sum(token in present for token in wanted) / len(wanted)


class EvidenceMatcher:
    """Decides whether a retrieved result supports an evidence item.

    Modes:
    - `auto` (default): the locator when it names a known field (all must agree with the
      result's provenance), else `reference_id` (result id, chunk id or document id), else
      the evidence text.
    - `locator`, `reference`, `text`: only that criterion.
    - `locator_and_text`: the locator must agree *and* the text must be found — "the chunk
      comes from the right page and contains the fact".

    Text is found when the whitespace-normalised evidence text occurs in the result, or, with
    `min_text_overlap` set (0 < x ≤ 1), when at least that fraction of its word tokens does
    (robust to chunk boundaries and reformatting).
    """

    def __init__(self, mode: MatchMode = "auto", min_text_overlap: float | None = None) -> None:
        if mode not in ("auto", "locator", "reference", "text", "locator_and_text"):
            raise ValueError(
                "mode must be one of auto, locator, reference, text, locator_and_text; "
                f"got {mode!r}"
            )
        if min_text_overlap is not None and not 0 < min_text_overlap <= 1:
            raise ValueError(f"min_text_overlap must be within (0, 1], got {min_text_overlap}")
        self.mode = mode
        self.min_text_overlap = min_text_overlap

    def text_found(self, evidence: BenchmarkEvidence, result: QueryResult) -> bool | None:
        """Whether the evidence text is in the result; None when the evidence has no text."""
        if not evidence.text:
            return None
        if self.min_text_overlap is None:
            return normalize_space(evidence.text) in normalize_space(result.text)
        return text_overlap(evidence.text, result.text) >= self.min_text_overlap

    def matches(self, evidence: BenchmarkEvidence, result: QueryResult) -> bool:
        """Whether `result` supports `evidence` under this matcher's mode."""
        if self.mode == "locator":
            return bool(locator_matches(evidence, result))
        if self.mode == "reference":
            return bool(reference_matches(evidence, result))
        if self.mode == "text":
            return bool(self.text_found(evidence, result))
        if self.mode == "locator_and_text":
            return bool(locator_matches(evidence, result)) and bool(
                self.text_found(evidence, result)
            )
        for criterion in (locator_matches, reference_matches, self.text_found):
            verdict = criterion(evidence, result)
            if verdict is not None:
                return verdict
        return False


DEFAULT_MATCHER = EvidenceMatcher()


def evidence_matches(evidence: BenchmarkEvidence, result: QueryResult) -> bool:
    """Whether `result` supports `evidence` under the default (`auto`) matcher."""
    return DEFAULT_MATCHER.matches(evidence, result)
