"""A unit's plan keeps a knowledge base's manifest as the report needs it
(`heta_eval.run.units`)."""

from __future__ import annotations

from heta_eval.records import BenchmarkDocument, BenchmarkRunUnit, KnowledgeBaseManifest
from heta_eval.run.units import UnitPlan


def test_a_manifest_whose_sources_are_not_the_units_documents_keeps_its_keys() -> None:
    unit = BenchmarkRunUnit(unit_id="u")
    docs = tuple(BenchmarkDocument(document_id=d, name=f"{d}.txt", data="x") for d in "abc")
    plan = UnitPlan(unit, docs, ())
    keys = {d: (f"raw/benchmarks/b/test/{d}/{d}.txt", "0" * 64) for d in "ab"}  # c not stored
    manifest = KnowledgeBaseManifest(
        name="kb",
        recipe_name="bm25",
        query_modes=("bm25",),
        source_keys=tuple(key for key, _ in keys.values()),
        steps=(),
        build_seconds=0.0,
    )
    same = plan.kept_manifest(manifest, keys)
    assert same.source_keys == () and not same.sources_listed
    assert same.model_copy(update={"source_keys": (), "sources_listed": False}) == same
    # Another order, another set (an older build, a journaled unit): listed as they are.
    for other in (manifest.source_keys[::-1], manifest.source_keys[:1]):
        kept = manifest.model_copy(update={"source_keys": other})
        assert plan.kept_manifest(kept, keys) == kept
