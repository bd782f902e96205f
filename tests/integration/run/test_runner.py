"""BenchmarkRunner runs both shapes end to end and records failures instead of aborting
(in this process, on the sample benchmark and in-test adapters)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from heta_eval import BenchmarkError, BenchmarkRunner, EvaluationReport, RunnerSettings
from heta_eval.benchmarks import SampleBenchmark
from heta_eval.benchmarks.sample import SAMPLE_DATA
from heta_eval.kb import KnowledgeRecipe, LocalObjectStore
from heta_eval.protocols import BenchmarkAdapter
from heta_eval.records import BenchmarkCase, BenchmarkDocument, BenchmarkRunUnit

from ...conftest import load_recipe
from ...faulty_components import ScoreFailsForCase

SAMPLE_DOCUMENTS = SAMPLE_DATA / "documents.jsonl"


def _settings(tmp_path: Path, **kwargs: object) -> RunnerSettings:
    return RunnerSettings(output_dir=tmp_path / "run", store_dir=tmp_path / "store", **kwargs)


def _run(
    tmp_path: Path,
    benchmark: object,
    recipe: KnowledgeRecipe,
    evaluators: tuple | None = None,
    **kwargs: object,
) -> EvaluationReport:
    runner = BenchmarkRunner(
        benchmark=benchmark,  # type: ignore[arg-type]
        recipe=recipe,
        evaluators=evaluators if evaluators is not None else benchmark.evaluators(),  # type: ignore[attr-defined]
        settings=_settings(tmp_path, **kwargs),
    )
    return asyncio.run(runner.run())


def test_corpus_shape_builds_one_kb_and_writes_the_report(
    tmp_path: Path, bm25_recipe: KnowledgeRecipe
) -> None:
    bench = SampleBenchmark()
    report = _run(tmp_path, bench, bm25_recipe)
    assert len(report.knowledge_base_manifests) == 1
    assert report.knowledge_base_manifests[0].counts["documents"] == 36
    assert len(report.case_results) == 48 and not report.failed_cases
    assert set(report.score_summary) == {
        "bm25.evidence_recall@1",
        "bm25.evidence_recall@5",
        "bm25.ndcg@10",
        "bm25.context_has_answer@5",
    }
    # The sample is built so that BM25 finds most evidence but not all of it at rank 1.
    assert 0.6 <= report.score_summary["bm25.evidence_recall@1"] < 1.0
    assert (
        report.score_summary["bm25.evidence_recall@5"]
        >= report.score_summary["bm25.evidence_recall@1"]
    )
    # The runner returns the report; writing it is the lifecycle's (heta_eval.evaluate).
    assert not (tmp_path / "run" / "report.json").exists()
    assert EvaluationReport.read_json(report.write_json(tmp_path / "report.json")) == report
    store = LocalObjectStore(tmp_path / "store")
    assert (
        report.run.document_key("astronomy-jupiter-moons")
        == "raw/benchmarks/sample/test/astronomy-jupiter-moons/astronomy-jupiter-moons.txt"
    )
    # The report records the keys' layout, not every key: each document's is found from it.
    assert report.run.document_keys.exceptions == {} and report.run.document_keys.stored == 36
    ids = [json.loads(line)["document_id"] for line in SAMPLE_DOCUMENTS.read_text().splitlines()]
    keys = {doc: report.run.document_key(doc) for doc in ids}
    assert len(keys) == 36 and sorted(store.list("raw/")) == sorted(keys.values())
    for result in report.case_results:
        assert result.latency_seconds is not None and result.latency_seconds >= 0
        # Each retrieved item's key is left out (schema 4): the report's layout gives it.
        assert all(r.source_key is None for r in result.retrieved)
        assert all(report.source_key(r) == keys[r.document_id] for r in result.retrieved)
    # The knowledge base's sources are those documents: the report does not list them again.
    (manifest,) = report.knowledge_base_manifests
    assert not manifest.sources_listed and manifest.source_keys == ()
    assert manifest.counts["sources"] == 36
    assert report.recipe_manifest["name"] == "bm25" and report.finished_at >= report.started_at


def test_units_shape_builds_one_kb_per_unit_with_its_own_cases(
    tmp_path: Path, bm25_recipe: KnowledgeRecipe
) -> None:
    report = _run(tmp_path, SampleBenchmark(shape="units"), bm25_recipe)
    assert sorted(m.name for m in report.knowledge_base_manifests) == [
        f"sample-bm25-{u}" for u in ("astronomy", "computing_history", "cooking", "ocean_science")
    ]
    assert all(m.counts["documents"] == 9 for m in report.knowledge_base_manifests)
    for result in report.case_results:
        assert result.case_id.startswith(result.unit_id)
        assert all(r.document_id.startswith(result.unit_id) for r in result.retrieved)
    assert [u.cases for u in report.run.run_units] == [12, 12, 12, 12]


def test_limit_takes_a_seeded_subset_stratified_by_unit(
    tmp_path: Path, bm25_recipe: KnowledgeRecipe
) -> None:
    report = _run(tmp_path / "a", SampleBenchmark(shape="units"), bm25_recipe, limit=8)
    picked = [r.case_id for r in report.case_results]
    assert len(picked) == 8
    # Four units, eight cases: every unit gives two, and only the units used are built.
    assert sorted(u.cases for u in report.run.run_units) == [2, 2, 2, 2]
    assert report.run.cases.model_dump() == {"total": 48, "evaluated": 8, "failed": 0, "scored": 8}
    again = _run(tmp_path / "b", SampleBenchmark(shape="units"), bm25_recipe, limit=8)
    assert [r.case_id for r in again.case_results] == picked
    other = _run(tmp_path / "c", SampleBenchmark(shape="units"), bm25_recipe, limit=8, seed=1)
    assert [r.case_id for r in other.case_results] != picked
    few = _run(tmp_path / "d", SampleBenchmark(shape="units"), bm25_recipe, limit=3)
    assert len(few.knowledge_base_manifests) == 3


def test_limit_on_a_corpus_keeps_the_whole_corpus(
    tmp_path: Path, bm25_recipe: KnowledgeRecipe
) -> None:
    report = _run(tmp_path, SampleBenchmark(), bm25_recipe, limit=5)
    assert len(report.case_results) == 5
    assert report.knowledge_base_manifests[0].counts["documents"] == 36
    assert [r.case_id for r in report.case_results] != [f"astronomy-q0{i}" for i in range(1, 6)]


def test_query_failures_are_recorded_per_case(tmp_path: Path) -> None:
    spec = load_recipe().model_dump()
    spec["indexes"] = {
        "bm25": {"_target_": "tests.faulty_components.QueryFailsOnWord", "word": "comet"}
    }
    report = _run(tmp_path, SampleBenchmark(), KnowledgeRecipe.model_validate(spec))
    failed = report.failed_cases
    assert failed and len(failed) < len(report.case_results)
    assert all("comet" in r.query.lower() for r in failed)
    assert {r.error.stage for r in failed} == {"query"}  # type: ignore[union-attr]
    assert failed[0].error.message == "index refused a query containing 'comet'"  # type: ignore[union-attr]
    detail = report.score_details["bm25.evidence_recall@5"]
    assert detail.failed == len(failed) and detail.scored == 48 - len(failed)


def test_evaluator_failure_keeps_the_other_scores(
    tmp_path: Path, bm25_recipe: KnowledgeRecipe
) -> None:
    bench = SampleBenchmark()
    evaluators = (*bench.evaluators(), ScoreFailsForCase("cooking-q03"))
    report = _run(tmp_path, bench, bm25_recipe, evaluators=evaluators)
    (broken,) = report.failed_cases
    assert broken.case_id == "cooking-q03" and broken.error.evaluator == "fragile"  # type: ignore[union-attr]
    assert broken.score("evidence_recall@5") is not None and broken.score("fragile") is None
    assert report.score_details["bm25.fragile"].failed == 1
    assert report.score_summary["bm25.fragile"] == 1.0


def test_build_failure_marks_the_units_cases_and_still_reports(tmp_path: Path) -> None:
    spec = load_recipe().model_dump()
    spec["indexes"] = {"bm25": {"_target_": "tests.faulty_components.BuildAlwaysFails"}}
    report = _run(tmp_path, SampleBenchmark(), KnowledgeRecipe.model_validate(spec))
    assert len(report.failed_cases) == 48
    assert {r.error.stage for r in report.case_results} == {"build"}  # type: ignore[union-attr]
    assert report.score_summary == {}
    assert report.run.cases.failed == 48 and report.run.run_units[0].build_failed


class _Tiny(BenchmarkAdapter):
    """An in-test adapter yielding whatever it is given."""

    def __init__(self, documents: list, cases: list, units: list) -> None:
        self.data = (documents, cases, units)
        self.manifest = SampleBenchmark().manifest

    def resources(self) -> tuple:
        return ()

    async def prepare(self, workspace: object) -> object:
        return await SampleBenchmark().prepare(workspace)  # type: ignore[arg-type]

    async def _iter(self, items: list) -> AsyncIterator:
        for item in items:
            yield item

    def documents(self, prepared: object) -> AsyncIterator:
        return self._iter(self.data[0])

    def cases(self, prepared: object) -> AsyncIterator:
        return self._iter(self.data[1])

    def run_units(self, prepared: object) -> AsyncIterator:
        return self._iter(self.data[2])

    def evaluators(self) -> tuple:
        return SampleBenchmark().evaluators()


@pytest.mark.parametrize(
    ("documents", "cases", "units", "message"),
    [
        (
            [],
            [BenchmarkCase(case_id="c", query="q")],
            [BenchmarkRunUnit(unit_id="u")],
            "yielded no documents",
        ),
        (
            [BenchmarkDocument(document_id="d", name="d.txt", data="x")] * 2,
            [BenchmarkCase(case_id="c", query="q")],
            [BenchmarkRunUnit(unit_id="u")],
            "duplicate document_id: 'd'",
        ),
        (
            [BenchmarkDocument(document_id="d", name="d.txt", data="x")],
            [BenchmarkCase(case_id="c", query="q")],
            [],
            "yielded no units",
        ),
    ],
)
def test_bad_benchmarks_fail_before_any_build(
    tmp_path: Path,
    bm25_recipe: KnowledgeRecipe,
    documents: list,
    cases: list,
    units: list,
    message: str,
) -> None:
    with pytest.raises(BenchmarkError, match=message):
        _run(tmp_path, _Tiny(documents, cases, units), bm25_recipe)
    assert not list(LocalObjectStore(tmp_path / "store").list())
    assert not (tmp_path / "run" / "report.json").exists()


def test_unknown_query_mode_and_duplicate_metrics_are_refused(
    tmp_path: Path, bm25_recipe: KnowledgeRecipe
) -> None:
    bench = SampleBenchmark()
    with pytest.raises(BenchmarkError, match=r"runner.query_modes: \['dense'\]"):
        BenchmarkRunner(
            benchmark=bench,
            recipe=bm25_recipe,
            evaluators=bench.evaluators(),
            settings=_settings(tmp_path, query_modes=("dense",)),
        )
    with pytest.raises(BenchmarkError, match="listed twice"):
        BenchmarkRunner(
            benchmark=bench,
            recipe=bm25_recipe,
            evaluators=bench.evaluators() * 2,
            settings=_settings(tmp_path),
        )


def test_documents_from_uris_and_offline_refusal(
    tmp_path: Path, bm25_recipe: KnowledgeRecipe
) -> None:
    source = tmp_path / "kelp.txt"
    source.write_text("Kelp forests shelter sea otters.")
    documents = [
        BenchmarkDocument(document_id="kelp", name="kelp.txt", source_uri=source.as_uri()),
        BenchmarkDocument(
            document_id="web", name="web.txt", source_uri="https://example.org/x.txt"
        ),
    ]
    cases = [BenchmarkCase(case_id="c", query="what shelters otters")]
    bench = _Tiny(documents, cases, [BenchmarkRunUnit(unit_id="u")])
    report = _run(tmp_path, bench, bm25_recipe, offline=True)
    assert report.case_results[0].retrieved[0].document_id == "kelp"
    assert (
        "offline run: not fetching https://example.org/x.txt" in report.run.document_errors["web"]
    )
    assert report.knowledge_base_manifests[0].counts["documents"] == 1
