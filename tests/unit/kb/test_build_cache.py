"""The build cache: hits, misses, what invalidates an entry, and corrupt entries."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from heta_eval import BenchmarkRunner, EvaluationReport, RunnerSettings
from heta_eval.benchmarks import SampleBenchmark
from heta_eval.kb import BuildCache, KnowledgeBase, KnowledgeRecipe
from tests.conftest import load_recipe


def _run(
    tmp: Path,
    cache: BuildCache,
    recipe: KnowledgeRecipe | None = None,
    bench: object = None,
    **settings: object,
) -> EvaluationReport:
    bench = bench or SampleBenchmark()
    runner = BenchmarkRunner(
        benchmark=bench,  # type: ignore[arg-type]
        recipe=recipe or load_recipe(),
        evaluators=bench.evaluators(),  # type: ignore[attr-defined]
        settings=RunnerSettings(output_dir=tmp / "run", store_dir=tmp / "store", **settings),
        build_cache=cache,
    )
    return asyncio.run(runner.run())


def _scores(report: EvaluationReport) -> list[tuple]:
    return [(r.case_id, r.scores, tuple(i.id for i in r.retrieved)) for r in report.case_results]


def test_second_run_loads_the_kb_and_gives_the_same_results(tmp_path: Path) -> None:
    first = _run(tmp_path / "a", BuildCache(tmp_path / "cache"))
    assert first.run.cache["misses"] == 1 and first.run.cache["written"] == 1
    assert first.knowledge_base_manifests[0].cache_status == "miss"
    second = _run(tmp_path / "b", BuildCache(tmp_path / "cache"))
    assert second.run.cache["hits"] == 1 and second.run.cache["misses"] == 0
    manifest = second.knowledge_base_manifests[0]
    assert manifest.cache_status == "hit" and manifest.load_seconds is not None
    assert manifest.cache_key == first.knowledge_base_manifests[0].cache_key
    assert _scores(second) == _scores(first)


def test_query_time_settings_reuse_the_build_and_build_settings_do_not(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _run(tmp_path / "a", BuildCache(cache))
    assert _run(tmp_path / "b", BuildCache(cache), top_k=3).run.cache["hits"] == 1
    renamed = load_recipe().model_copy(update={"name": "renamed", "description": "same build"})
    assert _run(tmp_path / "c", BuildCache(cache), recipe=renamed).run.cache["hits"] == 1
    spec = load_recipe().model_dump()
    spec["indexes"]["bm25"]["k1"] = 0.9
    changed = _run(tmp_path / "d", BuildCache(cache), recipe=KnowledgeRecipe.model_validate(spec))
    assert changed.run.cache["misses"] == 1
    chunked = _run(tmp_path / "e", BuildCache(cache), recipe=load_recipe(chunk_size=32))
    assert chunked.run.cache["misses"] == 1


def test_a_changed_document_rebuilds(tmp_path: Path) -> None:
    from heta_eval.benchmarks import JsonlBenchmark
    from heta_eval.benchmarks.sample import SAMPLE_DATA

    documents = (SAMPLE_DATA / "documents.jsonl").read_text()
    (tmp_path / "docs.jsonl").write_text(documents)
    bench = JsonlBenchmark(tmp_path / "docs.jsonl", str(SAMPLE_DATA / "cases.jsonl"))
    assert (
        _run(tmp_path / "a", BuildCache(tmp_path / "cache"), bench=bench).run.cache["misses"] == 1
    )
    (tmp_path / "docs.jsonl").write_text(documents.replace("Ganymede", "Ganymedes", 1))
    bench = JsonlBenchmark(tmp_path / "docs.jsonl", str(SAMPLE_DATA / "cases.jsonl"))
    assert (
        _run(tmp_path / "b", BuildCache(tmp_path / "cache"), bench=bench).run.cache["misses"] == 1
    )


def test_a_corrupt_entry_is_discarded_and_rebuilt(tmp_path: Path) -> None:
    first = _run(tmp_path / "a", BuildCache(tmp_path / "cache"))
    entries = [p for p in (tmp_path / "cache" / "kb").glob("*/*") if p.is_dir()]
    (entry,) = entries
    victim = next(p for p in sorted(entry.rglob("*.npy")))
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    cache = BuildCache(tmp_path / "cache")
    second = _run(tmp_path / "b", cache)
    assert {k: second.run.cache[k] for k in ("hits", "misses", "discarded", "written")} == {
        "hits": 0,
        "misses": 1,
        "discarded": 1,
        "written": 1,
    }
    assert "does not match its checksum" in cache.stats.discarded_reasons[0]
    assert _scores(second) == _scores(first)
    # A half-written entry (no checksum list) is never used either.
    (entry / "checksums.json").unlink()
    third = _run(tmp_path / "c", BuildCache(tmp_path / "cache"))
    assert third.run.cache["discarded"] == 1 and _scores(third) == _scores(first)


@pytest.mark.parametrize(
    ("mode", "first", "second"), [("off", 0, 0), ("write", 1, 0), ("read", 0, 0)]
)
def test_cache_modes(tmp_path: Path, mode: str, first: int, second: int) -> None:
    one = _run(tmp_path / "a", BuildCache(tmp_path / "cache", mode))  # type: ignore[arg-type]
    two = _run(tmp_path / "b", BuildCache(tmp_path / "cache", mode))  # type: ignore[arg-type]
    assert one.run.cache["written"] == first
    assert two.run.cache["hits"] == second


def test_kb_save_and_load_round_trip(tmp_path: Path) -> None:
    report = _run(tmp_path / "a", BuildCache(tmp_path / "cache"))
    (entry,) = [p for p in (tmp_path / "cache" / "kb").glob("*/*") if p.is_dir()]
    kb = KnowledgeBase.load(entry, recipe=load_recipe(), name="again")
    assert kb.manifest().name == "again" and kb.manifest().counts["chunks"] == 36
    response = asyncio.run(kb.query("Which moon of Jupiter is the largest?", mode="bm25", top_k=3))
    assert response.results[0].source.document_id == "astronomy-jupiter-moons"
    assert report.knowledge_base_manifests[0].counts == kb.manifest().counts


def test_an_evaluator_change_rescores_cached_responses_without_querying(tmp_path: Path) -> None:
    from heta_eval.evaluators import EvidenceRecallAtK

    first = _run(tmp_path / "a", BuildCache(tmp_path / "cache"))
    assert first.run.cache["response_misses"] == 48
    bench = SampleBenchmark()
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=load_recipe(),
        evaluators=(EvidenceRecallAtK(k=3), *bench.evaluators()),
        settings=RunnerSettings(
            output_dir=tmp_path / "b" / "run", store_dir=tmp_path / "b" / "store"
        ),
        build_cache=BuildCache(tmp_path / "cache"),
    )
    second = asyncio.run(runner.run())
    assert second.run.cache["response_hits"] == 48
    assert second.run.timings_seconds["query"] == pytest.approx(
        first.run.timings_seconds["query"]
    )  # the original latencies, not new queries
    assert second.score_summary["bm25.ndcg@10"] == first.score_summary["bm25.ndcg@10"]
    assert "bm25.evidence_recall@3" in second.score_summary
    changed = _run(tmp_path / "c", BuildCache(tmp_path / "cache"), top_k=3)
    assert changed.run.cache["response_hits"] == 0  # another depth, other responses
