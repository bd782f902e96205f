"""Queries retrieved together (one bm25s call per batch) get exactly what each gets alone:
the same hits, scores and tie order."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from heta_eval.kb import KnowledgeBase, LocalObjectStore
from tests.conftest import load_recipe
from tests.scifact_corpus import tied_corpus


@pytest.fixture(scope="module")
def corpus(
    tmp_path_factory: pytest.TempPathFactory, scifact_dir: Path
) -> tuple[LocalObjectStore, list, list]:
    return tied_corpus(tmp_path_factory.mktemp("store"), scifact_dir)


def _ranked(response) -> list[tuple]:  # type: ignore[no-untyped-def]
    return [(r.id, r.score, r.text, r.source.model_dump()) for r in response.results]


def test_query_many_gives_each_query_what_it_gets_alone(corpus: tuple) -> None:
    store, sources, queries = corpus
    kb = KnowledgeBase._build(load_recipe(), "kb", store, sources)
    assert kb.exact_in_batches("bm25")
    together = asyncio.run(kb.query_many(queries, mode="bm25", top_k=40))
    alone = [asyncio.run(kb.query(q, mode="bm25", top_k=40)) for q in queries]
    assert [_ranked(r) for r in together] == [_ranked(r) for r in alone]
    # The ties are there to be ordered: some results share a score with their neighbour.
    scores = [r.score for response in together for r in response.results]
    assert any(a == b for a, b in itertools.pairwise(scores))
    assert together[-3].results == ()  # no known word: nothing retrieved, alone or together
