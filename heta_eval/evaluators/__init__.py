"""Reusable evaluators; benchmarks choose their defaults from these building blocks."""

from heta_eval.evaluators.answer import (
    AnswerContains,
    AnswerExactMatch,
    AnswerNumericMatch,
    normalize_answer,
)
from heta_eval.evaluators.evidence import EvidenceRecallAtK
from heta_eval.evaluators.matching import LOCATOR_FIELDS, EvidenceMatcher, evidence_matches
from heta_eval.evaluators.retrieval import (
    MAPAtK,
    MRRAtK,
    NDCGAtK,
    PrecisionAtK,
    RecallAtK,
    SuccessAtK,
)

__all__ = [
    "LOCATOR_FIELDS",
    "AnswerContains",
    "AnswerExactMatch",
    "AnswerNumericMatch",
    "EvidenceMatcher",
    "EvidenceRecallAtK",
    "MAPAtK",
    "MRRAtK",
    "NDCGAtK",
    "PrecisionAtK",
    "RecallAtK",
    "SuccessAtK",
    "evidence_matches",
    "normalize_answer",
]
