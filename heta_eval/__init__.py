"""heta_eval: declarative evaluation of knowledge-base recipes on real benchmarks."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from heta_eval.tracking.runs_frame import load_runs

# Names are imported on first use (PEP 562), so `heta-eval --help` and light imports such
# as `heta_eval.records` do not load the runner, the engine and their libraries.
_LAZY = {
    **dict.fromkeys(
        ("KnowledgeBase", "KnowledgeRecipe", "LocalObjectStore", "ObjectStore"), "heta_eval.kb"
    ),
    **dict.fromkeys(("BenchmarkEvaluatorProtocol", "BenchmarkProtocol"), "heta_eval.protocol"),
    **dict.fromkeys(("BenchmarkError", "BenchmarkRunner"), "heta_eval.runner"),
    "RunnerSettings": "heta_eval.runner_settings",
    # Needs pandas and MLflow.
    "load_runs": "heta_eval.tracking.runs_frame",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name, "heta_eval.records" if name in __all__ else None)
    if module is None:
        raise AttributeError(f"module 'heta_eval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
