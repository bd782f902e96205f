"""Reusable evaluators; benchmarks choose their defaults from these building blocks."""

from heta_eval.evaluators.answer import AnswerContains, AnswerExactMatch, normalize_answer
from heta_eval.evaluators.evidence import EvidenceRecallAtK
from heta_eval.evaluators.matching import LOCATOR_FIELDS, evidence_matches
from heta_eval.evaluators.retrieval import NDCGAtK, RecallAtK

__all__ = [
    "LOCATOR_FIELDS",
    "AnswerContains",
    "AnswerExactMatch",
    "EvidenceRecallAtK",
    "NDCGAtK",
    "RecallAtK",
    "evidence_matches",
    "normalize_answer",
]
