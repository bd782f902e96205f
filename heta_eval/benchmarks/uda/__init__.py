"""UDA-Benchmark: its adapter and its own scoring, as the benchmark's authors score it.

`adapter` (`UdaBenchmark`) reads UDA's published files (`files`), one question per entry or
QA-table row (`entries`) and the source documents (`documents`); the default evaluators are
UDA's metrics: the LCS evidence match and page recall (`evidence`) and one answer metric per
subset (`answers`; FinQA and TAT-QA in `finance`, reading numbers in `finance_reading`).
"""

from heta_eval.benchmarks.uda.adapter import SUBSETS, UdaBenchmark
from heta_eval.benchmarks.uda.answers import (
    AnswerOptions,
    FetaAnswerF1,
    FinQAExactMatch,
    NqAnswerF1,
    QasperAnswerF1,
    TatQAExactMatch,
    TatQAF1,
)
from heta_eval.benchmarks.uda.evidence import PageEvidenceRecallAtK, UdaEvidenceMatchAtK

__all__ = [
    "SUBSETS",
    "AnswerOptions",
    "FetaAnswerF1",
    "FinQAExactMatch",
    "NqAnswerF1",
    "PageEvidenceRecallAtK",
    "QasperAnswerF1",
    "TatQAExactMatch",
    "TatQAF1",
    "UdaBenchmark",
    "UdaEvidenceMatchAtK",
]
