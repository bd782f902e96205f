"""UDA's retrieval score: how much of the evidence text the top-k retrieved text covers.

The UDA-Benchmark authors score retrieval without page labels: the top-k retrieved texts are
joined (newline-separated) and, for each evidence text, the length of the longest common
subsequence (LCS) between evidence and retrieved text is divided by the evidence length.
Both texts are normalised first (lower-case, ASCII punctuation removed, whitespace
collapsed; unlike SQuAD, articles stay). The LCS runs over words (fin, paper, nq, tat) or
over characters (feta, whose evidence is a whole table). Scores of the items of one evidence
group are averaged, then the group averages (paper: one group per annotator's evidence).

Cases carry their evidence in `expected.metadata["uda_evidence"]`:
`{"level": "word"|"char", "groups": [[{"text": str, "alternatives": [str]}, ...], ...]}`;
an item scores the best of its text and its alternatives (fin: a table rendered two ways).
Items with no text after normalisation are dropped (the authors score them 0.5 whatever
was retrieved, which cannot discriminate); a case left without items is skipped, and so is
a case whose knowledge base holds at most k retrievable items (its top k is all of it: the
score would measure the parse, not the retrieval; see `heta_eval.evaluators.exhaustive`).

The authors score no retrieval for tat: `UdaEvidenceMatchAtK(extension=True)` is our
extension of their match to tat's facts, named `uda_evidence_match_ext@k` so that no
report shows it as theirs.
"""

from __future__ import annotations

import string
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from heta_eval.config.ranges import TOP_K_RANGE
from heta_eval.evaluators.evidence import EvidenceRecallAtK, labelled_evidence
from heta_eval.evaluators.exhaustive import exhaustive_skip
from heta_eval.evaluators.matching import EvidenceMatcher
from heta_eval.protocols import Evaluator
from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse

_PUNCTUATION = str.maketrans("", "", string.punctuation)
EVIDENCE_KEY = "uda_evidence"


def normalize_evidence(text: str) -> str:
    """UDA's retrieval normalisation: lower-case, drop punctuation, collapse whitespace."""
    return " ".join(text.lower().translate(_PUNCTUATION).split())


def lcs_length(gold: Sequence[Hashable], other: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of two sequences.

    Bit-parallel (Hyyrö's formulation of Allison-Dix): bit i of `v` is cleared once gold[i]
    can extend a common subsequence; each item of `other` costs a few big-integer
    operations over len(gold) bits instead of a row of the quadratic table, which keeps a
    whole table against 15,000 characters of retrieved text at milliseconds.
    """
    if not gold or not other:
        return 0
    masks: dict[Hashable, int] = {}
    for i, item in enumerate(gold):
        masks[item] = masks.get(item, 0) | (1 << i)
    full = (1 << len(gold)) - 1
    v = full
    for item in other:
        match = masks.get(item)
        if match:
            u = v & match
            v = ((v + u) | (v - u)) & full
    return len(gold) - v.bit_count()


def lcs_coverage(evidence: str, retrieved: str, level: str = "word") -> float | None:
    """LCS(evidence, retrieved) / len(evidence) over words or characters, after UDA's
    normalisation; None when the evidence has nothing left to match."""
    gold, other = normalize_evidence(evidence), normalize_evidence(retrieved)
    if level == "word":
        gold_units: Sequence[str] = gold.split()
        other_units: Sequence[str] = other.split()
    elif level == "char":
        gold_units, other_units = gold, other
    else:
        raise ValueError(f"level must be 'word' or 'char', got {level!r}")
    if not gold_units:
        return None
    return lcs_length(gold_units, other_units) / len(gold_units)


def evidence_match(spec: Mapping[str, Any], retrieved: str) -> tuple[float | None, list[float]]:
    """The case score (mean over groups of the mean over items) and each group's mean."""
    level = spec.get("level", "word")
    group_scores: list[float] = []
    for group in spec.get("groups") or ():
        item_scores = []
        for item in group:
            forms = [item.get("text") or "", *(item.get("alternatives") or ())]
            scores = [s for f in forms if (s := lcs_coverage(f, retrieved, level)) is not None]
            if scores:
                item_scores.append(max(scores))
        if item_scores:
            group_scores.append(sum(item_scores) / len(item_scores))
    if not group_scores:
        return None, []
    return sum(group_scores) / len(group_scores), group_scores


EXTENSION_NOTE = "heta_eval's extension: the UDA authors score no retrieval for this subset"


class UdaEvidenceMatchAtK(Evaluator):
    """UDA's evidence match of the top-k retrieved texts (see the module docstring);
    `extension=True` for a subset the authors do not score (named `..._ext@k`)."""

    def __init__(self, k: int = 5, extension: bool = False) -> None:
        TOP_K_RANGE.check("k", k)
        self.k = k
        self.extension = extension

    @property
    def name(self) -> str:
        return f"uda_evidence_match{'_ext' if self.extension else ''}@{self.k}"

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        spec = case.expected.metadata.get(EVIDENCE_KEY)
        if not spec:
            return EvaluationScore(name=self.name, value=None, skipped_reason="no evidence text")
        if (skipped := exhaustive_skip(self.name, response, self.k)) is not None:
            return skipped
        retrieved = "\n".join(r.text for r in response.results[: self.k])
        value, groups = evidence_match(spec, retrieved)
        if value is None:
            return EvaluationScore(
                name=self.name, value=None, skipped_reason="evidence text is empty"
            )
        details: dict[str, Any] = {"groups": [round(g, 4) for g in groups]}
        if self.extension:
            details["note"] = EXTENSION_NOTE
        return EvaluationScore(name=self.name, value=value, details=details)


PAGELESS_REASON = (
    "cannot discriminate: each knowledge base holds one document and the evidence names "
    "only that document (no page); see uda_evidence_match"
)


ONE_PAGE_REASON = (
    "cannot discriminate: the knowledge base holds one document, a single page, so every "
    "result is on the same page"
)
PAGES_KEY = "document_pages"


class PageEvidenceRecallAtK(EvidenceRecallAtK):
    """Evidence recall@k over evidence that names a page. Skipped when the evidence names
    only the document, which in a one-document knowledge base every result comes from;
    when the knowledge base holds one document and the evidence's document is a single
    page (`metadata["document_pages"] == 1`); and when it holds at most k items."""

    def __init__(self, k: int = 10, matcher: EvidenceMatcher | None = None) -> None:
        super().__init__(k=k, matcher=matcher or EvidenceMatcher("locator"))

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        evidence = labelled_evidence(case)
        if evidence and not any("page_index" in e.locator for e in evidence):
            return EvaluationScore(name=self.name, value=None, skipped_reason=PAGELESS_REASON)
        scope = response.scope
        if (
            evidence
            and scope is not None
            and scope.documents == 1
            and all(e.metadata.get(PAGES_KEY) == 1 for e in evidence)
        ):
            return EvaluationScore(name=self.name, value=None, skipped_reason=ONE_PAGE_REASON)
        return await super().evaluate(case, response)
