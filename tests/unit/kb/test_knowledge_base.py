"""The embedded BM25 knowledge base builds from raw keys and answers with provenance."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from heta_eval.kb import (
    KnowledgeBase,
    KnowledgeRecipe,
    LocalObjectStore,
    RawSource,
    UnknownQueryModeError,
)
from tests.conftest import load_recipe

DOCS = {
    "cats": "Cats are small carnivorous mammals. A cat purrs when content.",
    "dogs": "Dogs are loyal companions and were domesticated from wolves.",
    "ocean": "Kelp forests grow in cold, nutrient-rich ocean water along rocky coasts.",
}


def _build(
    tmp_path: Path, recipe: KnowledgeRecipe, extra: dict[str, bytes] | None = None
) -> KnowledgeBase:
    store = LocalObjectStore(tmp_path / "store")
    sources = []
    for doc_id, text in {**{k: v.encode() for k, v in DOCS.items()}, **(extra or {})}.items():
        key = f"raw/benchmarks/t/test/{doc_id}/{doc_id}.txt"
        store.put(key, text)
        sources.append(RawSource(key=key, document_id=doc_id))
    return asyncio.run(KnowledgeBase.create(recipe=recipe, name="kb", store=store, sources=sources))


def test_query_returns_ranked_chunks_with_provenance(
    tmp_path: Path, bm25_recipe: KnowledgeRecipe
) -> None:
    kb = _build(tmp_path, bm25_recipe)
    response = asyncio.run(kb.query("why does a cat purr", mode="bm25", top_k=5))
    assert response.mode == "bm25" and response.query == "why does a cat purr"
    top = response.results[0]
    assert top.source.document_id == "cats"
    assert top.source.source_key == "raw/benchmarks/t/test/cats/cats.txt"
    assert top.source.chunk_id == "cats#0" and top.source.chunk_index == 0
    assert top.text == DOCS["cats"][top.source.start_char : top.source.end_char]
    # Documents sharing no term with the query are not returned.
    assert {r.source.document_id for r in response.results} == {"cats"}
    assert [r.score for r in response.results] == sorted(
        (r.score for r in response.results), reverse=True
    )


def test_top_k_is_respected_and_larger_than_the_corpus_is_fine(tmp_path: Path) -> None:
    kb = _build(tmp_path, load_recipe(chunk_size=3, chunk_overlap=0))
    assert len(asyncio.run(kb.query("cats dogs kelp ocean", mode="bm25", top_k=2)).results) == 2
    many = asyncio.run(kb.query("cats dogs kelp ocean wolves", mode="bm25", top_k=1000))
    assert 3 <= len(many.results) <= kb.manifest().counts["chunks"]


def test_manifest_describes_the_build(tmp_path: Path, bm25_recipe: KnowledgeRecipe) -> None:
    manifest = _build(tmp_path, bm25_recipe).manifest()
    assert [s.name for s in manifest.steps] == ["parse", "chunk", "index:bm25"]
    assert manifest.counts == {"sources": 3, "documents": 3, "chunks": 3, "document_errors": 0}
    assert manifest.query_modes == ("bm25",) and manifest.build_seconds > 0


def test_a_source_that_cannot_be_parsed_is_recorded_and_the_rest_builds(
    tmp_path: Path, bm25_recipe: KnowledgeRecipe
) -> None:
    kb = _build(tmp_path, bm25_recipe, extra={"latin1": "caf\xe9 cr\xe8me".encode("latin-1")})
    manifest = kb.manifest()
    assert manifest.counts["documents"] == 3 and manifest.counts["document_errors"] == 1
    (message,) = manifest.document_errors.values()
    assert "latin1/latin1.txt: not valid utf-8 at byte 3" in message


def test_unknown_query_mode_names_the_available_ones(
    tmp_path: Path, bm25_recipe: KnowledgeRecipe
) -> None:
    kb = _build(tmp_path, bm25_recipe)
    with pytest.raises(UnknownQueryModeError, match=r"available: \['bm25'\]"):
        asyncio.run(kb.query("cats", mode="dense"))
    with pytest.raises(ValueError, match="top_k"):
        asyncio.run(kb.query("cats", mode="bm25", top_k=0))


def test_bm25_parameters_change_the_scores(tmp_path: Path) -> None:
    plain = _build(tmp_path / "a", load_recipe())
    spec = load_recipe().model_dump()
    spec["indexes"]["bm25"]["k1"] = 0.5
    tuned = _build(tmp_path / "b", KnowledgeRecipe.model_validate(spec))
    query = "cat cat purrs mammals"
    first = asyncio.run(plain.query(query, mode="bm25")).results[0].score
    second = asyncio.run(tuned.query(query, mode="bm25")).results[0].score
    assert first != pytest.approx(second)


def test_recipe_validation() -> None:
    with pytest.raises(
        ValueError, match="chunk_overlap \\(8\\) must be smaller than chunk_size \\(8\\)"
    ):
        load_recipe(chunk_size=8, chunk_overlap=8)
    spec = load_recipe().model_dump()
    spec["indexes"]["bm25"]["_target_"] = "heta_eval.kb.BM25Indx"
    with pytest.raises(ValueError, match=r"did you mean heta_eval\.kb\.BM25Index"):
        KnowledgeRecipe.model_validate(spec)
    spec = load_recipe().model_dump()
    spec["query_modes"] = ["bm25", "dense"]
    with pytest.raises(ValueError, match=r"\['dense'\] are neither in indexes nor in fusions"):
        KnowledgeRecipe.model_validate(spec)
