"""Pydantic records that cross a boundary: benchmark inputs, query responses, reports."""

from heta_eval.records.benchmark import (
    BenchmarkCase,
    BenchmarkContents,
    BenchmarkDocument,
    BenchmarkEvidence,
    BenchmarkExpected,
    BenchmarkManifest,
    BenchmarkResource,
    BenchmarkRunUnit,
    BenchmarkWorkspace,
    BuildScope,
    PreparedBenchmark,
)
from heta_eval.records.evaluation import (
    REPORT_SCHEMA_VERSION,
    EvaluationCaseResult,
    EvaluationError,
    EvaluationReport,
    EvaluationScore,
    RetrievedItem,
    ScoreAggregate,
)
from heta_eval.records.query import (
    BuildStep,
    KnowledgeBaseManifest,
    QueryResponse,
    QueryResult,
    SourceRef,
)

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "BenchmarkCase",
    "BenchmarkContents",
    "BenchmarkDocument",
    "BenchmarkEvidence",
    "BenchmarkExpected",
    "BenchmarkManifest",
    "BenchmarkResource",
    "BenchmarkRunUnit",
    "BenchmarkWorkspace",
    "BuildScope",
    "BuildStep",
    "EvaluationCaseResult",
    "EvaluationError",
    "EvaluationReport",
    "EvaluationScore",
    "KnowledgeBaseManifest",
    "PreparedBenchmark",
    "QueryResponse",
    "QueryResult",
    "RetrievedItem",
    "ScoreAggregate",
    "SourceRef",
]
