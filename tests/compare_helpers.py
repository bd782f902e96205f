"""Reports with known per-case values and a `heta-eval-compare` subprocess, shared by the
comparison tests."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from heta_eval import EvaluationReport
from heta_eval.evaluators.summary import summarize
from heta_eval.records import BenchmarkManifest, EvaluationCaseResult, EvaluationScore, RunFacts

from .conftest import user_env

UNDETERMINED = "?"


def compare_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The terminal a user reads it in: 120 columns, whatever the test process was given.
    env = user_env(COLUMNS="120")
    env["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    return subprocess.run(
        [sys.executable, "-m", "heta_eval.cli.compare", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _score(name: str, value: float | str | None) -> EvaluationScore:
    if value == UNDETERMINED:
        return EvaluationScore(name=name, value=None, undetermined=True)
    if value is None:
        return EvaluationScore(name=name, value=None, skipped_reason="does not apply")
    return EvaluationScore(name=name, value=float(value))


def modes_report(
    name: str,
    by_mode: dict[str, dict[str, list]],
    case_ids: list[str] | None = None,
    primary: str | None = None,
) -> EvaluationReport:
    """A report over cases c0, c1, … (unit u) with per-case values per query mode and metric;
    the primary mode is `primary`, else the last mode (as for real recipes)."""
    first = next(iter(by_mode.values()))
    n = len(next(iter(first.values())))
    ids = case_ids or [f"c{i}" for i in range(n)]
    results = [
        EvaluationCaseResult(
            case_id=case_id,
            unit_id="u",
            query_mode=mode,
            query=f"question {case_id}",
            scores=tuple(_score(m, values[i]) for m, values in metrics.items()),
        )
        for mode, metrics in by_mode.items()
        for i, case_id in enumerate(ids)
    ]
    names = list(dict.fromkeys(m for metrics in by_mode.values() for m in metrics))
    summary, details = summarize(results, list(by_mode), names)
    now = datetime.now(UTC)
    manifest: dict = {"name": name}
    if primary:
        manifest["metadata"] = {"primary_query_mode": primary}
    return EvaluationReport(
        report_id=name,
        benchmark=BenchmarkManifest(name="synthetic"),
        knowledge_base_name=f"synthetic-{name}",
        knowledge_base_manifests=(),
        recipe_manifest=manifest,
        query_modes=tuple(by_mode),
        score_summary=summary,
        score_details=details,
        case_results=tuple(results),
        started_at=now,
        finished_at=now,
        run=RunFacts(
            top_k=10,
            evaluators=tuple(names),
            cases={"total": n, "evaluated": n, "failed": 0, "scored": n},
        ),
    )


def synthetic_report(
    name: str, metrics: dict[str, list], case_ids: list[str] | None = None
) -> EvaluationReport:
    """A report over cases c0, c1, … (unit u, mode bm25) with the given per-case values."""
    return modes_report(name, {"bm25": metrics}, case_ids)


def direct_holm(pvalues: list[float]) -> list[float]:
    m = len(pvalues)
    order = np.argsort(pvalues, kind="stable")
    adjusted = np.minimum(1.0, (m - np.arange(m)) * np.asarray(pvalues)[order])
    adjusted = np.maximum.accumulate(adjusted)
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()


def binary_pair() -> tuple[EvaluationReport, EvaluationReport]:
    # 7 cases the baseline gets and the other misses (b), 2 the other way round (c),
    # 10 both get, 8 neither gets; then one case skipped by the other run and one
    # undetermined in the baseline (both excluded from the pairs).
    base = [1] * 7 + [0] * 2 + [1] * 10 + [0] * 8 + [1, UNDETERMINED]
    other = [0] * 7 + [1] * 2 + [1] * 10 + [0] * 8 + [None, 1]
    rng = np.random.default_rng(7)
    graded_base = rng.random(len(base)).round(3).tolist()
    graded_other = (np.asarray(graded_base) + rng.normal(0.05, 0.1, len(base))).round(3)
    return (
        synthetic_report("a", {"hit@1": base, "ndcg@10": graded_base}),
        synthetic_report("b", {"hit@1": other, "ndcg@10": graded_other.tolist()}),
    )
