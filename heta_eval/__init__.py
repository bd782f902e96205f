"""heta_eval: declarative evaluation of knowledge-base recipes on real benchmarks."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from heta_eval.config.resolve import ConfigError
    from heta_eval.kb import KnowledgeBase, KnowledgeRecipe, LocalObjectStore, ObjectStore
    from heta_eval.protocols import (
        BaseKnowledgeBase,
        BaseRecipe,
        BaseTracker,
        BenchmarkAdapter,
        BenchmarkEvaluatorProtocol,
        BenchmarkProtocol,
        Evaluator,
        KnowledgeBaseLike,
        RecipeLike,
        Tracker,
    )
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
        RunFacts,
        RunIdentity,
        SourceRef,
    )
    from heta_eval.results.cases_frame import load_cases
    from heta_eval.results.runs_frame import load_runs
    from heta_eval.run.assembly import RunComponents, assemble
    from heta_eval.run.failures import FailureRateExceededError
    from heta_eval.run.lifecycle import evaluate
    from heta_eval.run.runner import BenchmarkError, BenchmarkRunner
    from heta_eval.run.settings import RunnerSettings

# Names are imported on first use (PEP 562), so `heta-eval --help` and light imports such
# as `heta_eval.records` do not load the runner, the engine and their libraries.
_LAZY = {
    **dict.fromkeys(
        ("KnowledgeBase", "KnowledgeRecipe", "LocalObjectStore", "ObjectStore"), "heta_eval.kb"
    ),
    **dict.fromkeys(
        (
            "BaseKnowledgeBase",
            "BaseRecipe",
            "BaseTracker",
            "BenchmarkAdapter",
            "BenchmarkEvaluatorProtocol",
            "BenchmarkProtocol",
            "Evaluator",
            "KnowledgeBaseLike",
            "RecipeLike",
            "Tracker",
        ),
        "heta_eval.protocols",
    ),
    **dict.fromkeys(("RunComponents", "assemble"), "heta_eval.run.assembly"),
    "ConfigError": "heta_eval.config.resolve",
    "evaluate": "heta_eval.run.lifecycle",
    "FailureRateExceededError": "heta_eval.run.failures",
    **dict.fromkeys(("BenchmarkError", "BenchmarkRunner"), "heta_eval.run.runner"),
    "RunnerSettings": "heta_eval.run.settings",
    # Need pandas (and MLflow for tracked runs).
    "load_runs": "heta_eval.results.runs_frame",
    "load_cases": "heta_eval.results.cases_frame",
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
    "BaseKnowledgeBase",
    "BaseRecipe",
    "BaseTracker",
    "BenchmarkAdapter",
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
    "ConfigError",
    "EvaluationCaseResult",
    "EvaluationError",
    "EvaluationReport",
    "EvaluationScore",
    "Evaluator",
    "FailureRateExceededError",
    "KnowledgeBase",
    "KnowledgeBaseLike",
    "KnowledgeRecipe",
    "LocalObjectStore",
    "ObjectStore",
    "PreparedBenchmark",
    "QueryResponse",
    "QueryResult",
    "RecipeLike",
    "RunComponents",
    "RunFacts",
    "RunIdentity",
    "RunnerSettings",
    "SourceRef",
    "Tracker",
    "__version__",
    "assemble",
    "evaluate",
    "load_cases",
    "load_runs",
]
