"""What `runner.shards` is checked against, shared by the unit, in-process and Ray tests:
the unsharded run's rankings and reports, and the synthetic corpus they are compared on."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import numpy as np

from heta_eval import BenchmarkRunner, RunnerSettings
from heta_eval.kb import KnowledgeRecipe
from heta_eval.records import EvaluationReport

from .conftest import REPO, load_recipe

sys.path.insert(0, str(REPO / "benchmarks"))
from synthetic import write_corpus


def synthetic_corpus(root: Path) -> Path:
    """A synthetic BEIR-layout corpus (benchmarks/synthetic.py): 2,000 documents, 200 queries."""
    return write_corpus(root, 2000, 200, seed=7)


def evaluate(
    benchmark: Any, tmp_path: Path, name: str, recipe: KnowledgeRecipe | None = None, **values: Any
) -> EvaluationReport:
    """`benchmark` through the runner with everything under `tmp_path/name`, offline."""
    settings = RunnerSettings(
        output_dir=tmp_path / name / "run",
        store_dir=tmp_path / name / "store",
        workspace_dir=tmp_path / name / "data",
        state_dir=tmp_path / name / "state",
        offline=True,
        progress="off",
        **values,
    )
    runner = BenchmarkRunner(
        benchmark=benchmark,
        recipe=recipe or load_recipe(),
        evaluators=benchmark.evaluators(),
        settings=settings,
    )
    return asyncio.run(runner.run())


def same_ranking(expected: list[tuple[str, float]], got: list[tuple[str, float]]) -> None:
    """The same scores, by the same chunks; chunks may differ only among equal scores at the
    cut (which of several equal scores bm25s keeps is numpy's partition order)."""
    assert len(got) == len(expected)
    assert np.allclose(sorted(s for _, s in got), sorted(s for _, s in expected), rtol=0, atol=1e-9)
    mine, theirs = dict(got), dict(expected)
    for chunk in mine.keys() & theirs.keys():
        assert abs(mine[chunk] - theirs[chunk]) <= 1e-9, chunk
    cut = min((s for _, s in expected), default=0.0)
    assert all(theirs[c] == cut for c in theirs.keys() - mine.keys())
    assert all(mine[c] == cut for c in mine.keys() - theirs.keys())


def assert_equal_runs(expected: EvaluationReport, got: EvaluationReport) -> None:
    """A sharded run's report equals the unsharded one's (up to equal scores at the cut)."""
    assert got.score_summary == expected.score_summary
    assert len(got.case_results) == len(expected.case_results)
    for mine, theirs in zip(got.case_results, expected.case_results, strict=True):
        assert (mine.case_id, mine.query_mode, mine.error) == (
            theirs.case_id,
            theirs.query_mode,
            None,
        )
        assert [(s.name, s.value) for s in mine.scores] == [
            (s.name, s.value) for s in theirs.scores
        ]
        same_ranking(
            [(i.id, i.score) for i in theirs.retrieved], [(i.id, i.score) for i in mine.retrieved]
        )
        # The same provenance for the chunks both return.
        by_id = {i.id: i for i in theirs.retrieved}
        for item in mine.retrieved:
            if item.id in by_id:
                assert item == by_id[item.id]
    (kb,) = got.knowledge_base_manifests
    (unsharded,) = expected.knowledge_base_manifests
    assert kb.counts == {**unsharded.counts, "shards": kb.counts["shards"]}
    assert kb.source_keys == unsharded.source_keys
    assert kb.document_errors == unsharded.document_errors
    assert kb.cache_key is None  # sharded knowledge bases are not cached
