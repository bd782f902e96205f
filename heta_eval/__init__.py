"""heta_eval: declarative evaluation of knowledge-base recipes on real benchmarks."""

from heta_eval.kb import KnowledgeBase, KnowledgeRecipe, LocalObjectStore, ObjectStore
from heta_eval.protocol import BenchmarkEvaluatorProtocol, BenchmarkProtocol
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkContents,
    BenchmarkDocument,
    BenchmarkEvidence,
    BenchmarkExpected,
    BenchmarkManifest,
    BenchmarkResource,
    BenchmarkRunUnit,
    BenchmarkWorkspace,
    EvaluationCaseResult,
    EvaluationError,
    EvaluationReport,
    EvaluationScore,
    PreparedBenchmark,
    QueryResponse,
    QueryResult,
    SourceRef,
)
from heta_eval.runner import BenchmarkError, BenchmarkRunner
from heta_eval.runner_settings import RunnerSettings

__version__ = "0.1.0"

__all__ = [
    "BenchmarkCase",
    "BenchmarkContents",
    "BenchmarkDocument",
    "BenchmarkError",
    "BenchmarkEvaluatorProtocol",
    "BenchmarkEvidence",
    "BenchmarkExpected",
    "BenchmarkManifest",
    "BenchmarkProtocol",
    "BenchmarkResource",
    "BenchmarkRunUnit",
    "BenchmarkRunner",
    "BenchmarkWorkspace",
    "EvaluationCaseResult",
    "EvaluationError",
    "EvaluationReport",
    "EvaluationScore",
    "KnowledgeBase",
    "KnowledgeRecipe",
    "LocalObjectStore",
    "ObjectStore",
    "PreparedBenchmark",
    "QueryResponse",
    "QueryResult",
    "RunnerSettings",
    "SourceRef",
    "__version__",
    "load_runs",
]


def __getattr__(name: str) -> object:
    # `load_runs` needs pandas and MLflow; import them only when it is asked for.
    if name == "load_runs":
        from heta_eval.tracking.runs_frame import load_runs

        return load_runs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
