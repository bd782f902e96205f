"""Each bridge builds with its framework's own types and maps what comes back to our
provenance: every result names the document, page and characters it came from (the parsed
text at those characters is the result's text), and an answering product's answer is kept."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from omegaconf import OmegaConf

from heta_eval.bridges.factory import FactoryKnowledgeBase, FactoryRecipe, LostProvenanceError
from heta_eval.config.components import instantiate
from heta_eval.kb import LocalObjectStore, MediaTypeParser, RawSource
from heta_eval.kb.parsers.base import SEGMENTS_MEDIA_TYPE
from heta_eval.records import QueryResponse

from ...conftest import REPO
from .factories import require_frameworks

require_frameworks("langchain_core", "llama_index.core", "haystack")

REPORT = {
    "segments": [
        {
            "text": "The company reported revenue of 4.2 billion dollars.",
            "locator": {"page_index": 0},
        },
        {
            "text": "Operating costs fell sharply. The board approved a dividend of 30 cents "
            "per share, paid in March. Mining output rose in the northern region.",
            "locator": {"page_index": 7, "section": "Dividends"},
        },
    ]
}
NOTES = {
    "cats": "The cat sat on the mat. Cats like fish and sleep all day in the sun.",
    "qubits": "Quantum computers use qubits. A qubit holds 0 and 1 in superposition.",
}
EXAMPLES = "heta_eval.bridges.{}.examples.{}"


def recipe(framework: str, factory: str | None = None, **arguments: Any) -> FactoryRecipe:
    """`conf/recipe/{framework}.yaml` as the CLI builds it, with another example factory
    and arguments when asked."""
    config = OmegaConf.to_container(
        OmegaConf.load(REPO / "conf" / "recipe" / f"{framework}.yaml"), resolve=True
    )
    if factory is not None:
        config["factory"] = {"_target_": EXAMPLES.format(framework, factory)}
    config["factory"].update(arguments)
    return instantiate(config, _recursive_=False)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalObjectStore, list[RawSource]]:
    store = LocalObjectStore(tmp_path_factory.mktemp("bridges") / "store")
    key = "raw/benchmarks/demo/test/report/report.segments.json"
    store.put(key, json.dumps(REPORT).encode())
    sources = [RawSource(key=key, document_id="report", media_type=SEGMENTS_MEDIA_TYPE)]
    for doc, text in NOTES.items():
        store.put(f"raw/benchmarks/demo/test/{doc}/{doc}.txt", text.encode())
        sources.append(RawSource(key=f"raw/benchmarks/demo/test/{doc}/{doc}.txt", document_id=doc))
    return store, sources


def build(
    made: FactoryRecipe, corpus: tuple[LocalObjectStore, list[RawSource]]
) -> FactoryKnowledgeBase:
    store, sources = corpus
    return asyncio.run(made.create_knowledge_base(name="demo", store=store, sources=sources))


def ask(kb: FactoryKnowledgeBase, text: str, top_k: int = 5) -> QueryResponse:
    return asyncio.run(kb.query(text, mode=kb.query_modes[0], top_k=top_k))


def assert_provenance(response: QueryResponse, corpus: tuple[LocalObjectStore, Any]) -> None:
    """Every result's characters are where its text is in the parsed source."""
    store, sources = corpus
    by_key = {s.key: s for s in sources}
    assert response.results
    for result in response.results:
        source = by_key[result.source.source_key]
        assert result.source.document_id == source.document_id
        parsed = MediaTypeParser().parse(source, store.get(source.key)).text
        start, end = result.source.start_char, result.source.end_char
        assert start is not None and parsed[start:end] == result.text, result


# Small chunks, so that documents are split and offsets matter.
CASES = {
    "langchain": ("bm25_retriever", {"chunk_size": 60, "k": 5, "tokens": "words"}),
    "llamaindex": ("keyword_retriever", {"chunk_size": 24, "chunk_overlap": 0, "k": 5}),
    "haystack": ("bm25_pipeline", {"split_length": 8, "top_k": 5}),
}


@pytest.mark.parametrize("framework", CASES)
def test_results_name_the_document_page_and_characters(framework: str, corpus) -> None:
    factory, arguments = CASES[framework]
    made = recipe(framework, factory, **arguments)
    kb = build(made, corpus)
    response = ask(kb, "dividend per share paid")
    assert_provenance(response, corpus)
    top = response.results[0]
    assert top.source.document_id == "report"
    assert top.source.page_index == 7 and top.source.metadata["section"] == "Dividends"
    assert response.answer is None and not made.answers
    assert response.trace["engine"] == framework and response.trace["kind"] == made.kind
    # The framework's depth is its own; runner.top_k cuts.
    assert len(ask(kb, "the cat and the qubit", top_k=2).results) <= 2
    manifest = kb.manifest()
    assert manifest.counts == {"documents": 3, "skipped_documents": 0}
    assert [s.name for s in manifest.steps] == ["parse", "factory"]
    assert manifest.steps[1].component == EXAMPLES.format(framework, factory)
    assert made.manifest()["engine_versions"]
    assert ask(kb, "   ").results == ()


ANSWERING = {
    "langchain": ("bm25_answer_chain", {"chunk_size": 60, "k": 2, "tokens": "words"}),
    "llamaindex": ("keyword_query_engine", {"chunk_size": 24, "chunk_overlap": 0, "k": 2}),
    "haystack": ("bm25_answer_pipeline", {"split_length": 8, "top_k": 2}),
}


@pytest.mark.parametrize("framework", ANSWERING)
def test_an_answering_product_keeps_its_answer_and_its_sources(framework: str, corpus) -> None:
    factory, arguments = ANSWERING[framework]
    made = recipe(framework, factory, **arguments)
    assert made.answers and made.manifest()["answerer"] == made.kind
    response = ask(build(made, corpus), "Which animal likes fish?")
    assert_provenance(response, corpus)
    assert response.results[0].source.document_id == "cats", response
    # The framework's echo model answers with its prompt: the query and the context.
    assert "Which animal likes fish?" in response.answer
    assert response.results[0].text.strip() in response.answer


def test_a_chain_that_gives_no_context_is_refused_with_what_it_gave(corpus) -> None:
    made = instantiate(
        {
            "_target_": "heta_eval.bridges.langchain.LangChainRecipe",
            "name": "strings",
            "factory": {"_target_": "tests.unit.bridges.factories.langchain_string_chain"},
        },
        _recursive_=False,
    )
    with pytest.raises(TypeError, match="mapping with the retrieved documents under 'context'"):
        ask(build(made, corpus), "cats")


def test_a_retriever_that_drops_our_metadata_is_refused(corpus) -> None:
    made = instantiate(
        {
            "_target_": "heta_eval.bridges.langchain.LangChainRecipe",
            "name": "forgetful",
            "factory": {"_target_": "tests.unit.bridges.factories.langchain_forgetful_retriever"},
        },
        _recursive_=False,
    )
    with pytest.raises(LostProvenanceError, match="'document_id'/'source_key'"):
        ask(build(made, corpus), "cats")


def test_llamaindex_chunk_ids_are_repeatable(corpus) -> None:
    arguments = {"chunk_size": 24, "chunk_overlap": 0, "k": 5}
    first, again = (
        {r.id for r in ask(build(recipe("llamaindex", **arguments), corpus), "cats fish").results}
        for _ in range(2)
    )
    assert first == again and all(i.startswith("raw/benchmarks/demo/") for i in first)


def test_llamaindex_bm25_when_its_package_is_installed(corpus) -> None:
    pytest.importorskip(
        "llama_index.retrievers.bm25",
        reason="llama-index-retrievers-bm25 is not in the llamaindex extra (it pins PyStemmer<3)",
    )
    made = recipe("llamaindex", "bm25_retriever", chunk_size=24, chunk_overlap=0, k=5)
    assert made.manifest()["engine_versions"]["llama-index-retrievers-bm25"]
    response = ask(build(made, corpus), "dividend per share")
    assert_provenance(response, corpus)
    top = response.results[0]
    assert top.source.page_index == 7 and top.source.metadata["score"] == "framework"
