"""Reusable evaluators; benchmarks choose their defaults from these building blocks."""

from heta_eval.evaluators.answer import (
    AnswerContains,
    AnswerExactMatch,
    AnswerNumericMatch,
    AnswerTokenF1,
    normalize_answer,
    token_f1,
)
from heta_eval.evaluators.evidence import (
    AllEvidenceAtK,
    EvidenceMRRAtK,
    EvidenceNDCGAtK,
    EvidencePrecisionAtK,
    EvidenceRecallAtK,
    evidence_metrics,
)
from heta_eval.evaluators.judge import LLMJudge
from heta_eval.evaluators.matching import LOCATOR_FIELDS, EvidenceMatcher, evidence_matches
from heta_eval.evaluators.retrieval import (
    MAPAtK,
    MRRAtK,
    NDCGAtK,
    PrecisionAtK,
    RecallAtK,
    RPrecision,
    SuccessAtK,
    retrieval_metrics,
)

__all__ = [
    "LOCATOR_FIELDS",
    "AllEvidenceAtK",
    "AnswerContains",
    "AnswerExactMatch",
    "AnswerNumericMatch",
    "AnswerTokenF1",
    "EvidenceMRRAtK",
    "EvidenceMatcher",
    "EvidenceNDCGAtK",
    "EvidencePrecisionAtK",
    "EvidenceRecallAtK",
    "LLMJudge",
    "MAPAtK",
    "MRRAtK",
    "NDCGAtK",
    "PrecisionAtK",
    "RPrecision",
    "RecallAtK",
    "SuccessAtK",
    "evidence_matches",
    "evidence_metrics",
    "normalize_answer",
    "retrieval_metrics",
    "token_f1",
]
