"""Hybrid query modes: rank fusion and weighted score fusion by hand, and a fusion as a
query mode of its own in a recipe."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from heta_eval import BenchmarkRunner, RunnerSettings
from heta_eval.benchmarks import SampleBenchmark
from heta_eval.kb import KnowledgeRecipe, ReciprocalRankFusion, WeightedScoreFusion
from tests.conftest import load_recipe


def test_reciprocal_rank_fusion_by_hand() -> None:
    rrf = ReciprocalRankFusion(modes=["a", "b"], k=60)
    rankings = {"a": [(1, 9.0), (2, 5.0), (3, 1.0)], "b": [(3, 0.9), (1, 0.8)]}
    fused = rrf.fuse(rankings, top_k=3)
    expected = {1: 1 / 61 + 1 / 62, 2: 1 / 62, 3: 1 / 63 + 1 / 61}
    assert [p for p, _ in fused] == sorted(expected, key=lambda p: -expected[p])
    assert dict(fused) == pytest.approx(expected)
    assert ReciprocalRankFusion(modes=["a", "b"], depth=1).fuse(rankings, 5) == [
        (1, pytest.approx(1 / 61)),
        (3, pytest.approx(1 / 61)),
    ]
    with pytest.raises(ValueError, match="at least two"):
        ReciprocalRankFusion(modes=["a"])


def test_weighted_score_fusion_normalises_each_mode() -> None:
    rankings = {"a": [(1, 10.0), (2, 0.0)], "b": [(2, 3.0), (3, 1.0)]}
    minmax = WeightedScoreFusion(modes=["a", "b"], weights=[2.0, 1.0]).fuse(rankings, 3)
    assert dict(minmax) == pytest.approx({1: 2.0, 2: 1.0, 3: 0.0})
    zscore = WeightedScoreFusion(modes=["a", "b"], normalization="zscore").fuse(rankings, 3)
    assert dict(zscore) == pytest.approx({1: 1.0, 2: -1.0 + 1.0, 3: -1.0})
    with pytest.raises(ValueError, match="1 weights for 2 modes"):
        WeightedScoreFusion(modes=["a", "b"], weights=[1.0])


def _fusion_recipe() -> KnowledgeRecipe:
    spec = load_recipe().model_dump()
    spec["indexes"]["bm25_exact"] = {**spec["indexes"]["bm25"], "stemmer": None, "stopwords": None}
    spec["fusions"] = {
        "fusion": {"_target_": "heta_eval.kb.ReciprocalRankFusion", "modes": ["bm25", "bm25_exact"]}
    }
    spec["query_modes"] = []
    return KnowledgeRecipe.model_validate(spec)


def test_a_fusion_is_its_own_query_mode(tmp_path: Path) -> None:
    recipe = _fusion_recipe()
    assert recipe.query_modes == ("bm25", "bm25_exact", "fusion")
    # Fusions are chosen at query time: the build is the same with or without them.
    assert recipe.build_settings()["indexes"] == recipe.model_dump(mode="json")["indexes"]
    assert "fusions" not in recipe.build_settings()
    bench = SampleBenchmark()
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=recipe,
        evaluators=bench.evaluators(),
        settings=RunnerSettings(output_dir=tmp_path / "run", store_dir=tmp_path / "store"),
    )
    report = asyncio.run(runner.run())
    assert {r.query_mode for r in report.case_results} == {"bm25", "bm25_exact", "fusion"}
    assert report.score_summary["fusion.evidence_recall@5"] >= 0.9
    spec = recipe.model_dump()
    spec["fusions"]["fusion"]["modes"] = ["bm25", "dense"]
    with pytest.raises(
        ValueError, match=r"fusions\.fusion\.modes names modes that are not in indexes: \['dense'\]"
    ):
        KnowledgeRecipe.model_validate(spec)
