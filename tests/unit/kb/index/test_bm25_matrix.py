"""The BM25 score matrix built from flat token arrays (heta_eval/kb/index/bm25_matrix.py) is
bm25s's own, array for array and bit for bit, for every BM25 variant bm25s has."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import bm25s
import numpy as np
import pytest

from heta_eval.kb.index.bm25 import BM25Builder, BM25Index
from heta_eval.kb.index.bm25_matrix import FlatBM25, FlatTokens, nep50_promotion, term_pairs

METHODS = ["robertson", "lucene", "atire", "bm25l", "bm25+"]


@pytest.fixture(scope="module")
def texts(scifact_dir: Path) -> list[str]:
    """SciFact's corpus, with an empty document and one that repeats a word, as bm25s
    indexes them: title and text."""
    with (scifact_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    found = [f"{row['title']}\n{row['text']}" for row in rows]
    found.insert(3, "")
    found.insert(50, "cell " * 40 + "protein")
    return found


def _reference(settings: BM25Index, texts: list[str]) -> bm25s.BM25:
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    tokens = settings._tokenizer().tokenize(
        texts, update_vocab=True, return_as="tuple", show_progress=False
    )
    retriever = bm25s.BM25(
        k1=settings.k1, b=settings.b, delta=settings.delta, method=settings.method
    )
    retriever.index(tokens, show_progress=False)
    return retriever


def _same_arrays(built: bm25s.BM25, reference: bm25s.BM25) -> None:
    for name in ("data", "indices", "indptr"):
        mine, theirs = built.scores[name], reference.scores[name]
        assert mine.dtype == theirs.dtype, name
        assert mine.shape == theirs.shape, name
        assert mine.tobytes() == theirs.tobytes(), f"{name} differs"
    assert built.scores["num_docs"] == reference.scores["num_docs"]
    assert built.vocab_dict == reference.vocab_dict
    if reference.nonoccurrence_array is None:
        assert built.nonoccurrence_array is None
    else:
        assert built.nonoccurrence_array.tobytes() == reference.nonoccurrence_array.tobytes()


@pytest.mark.parametrize("method", METHODS)
def test_the_flat_build_is_bm25s_index_bit_for_bit(texts: list[str], method: str) -> None:
    assert nep50_promotion(), "the flat build needs NumPy 2's promotion; this test expects it"
    settings = BM25Index(method=method, k1=1.2, b=0.7, delta=0.8)
    builder = BM25Builder(settings)
    for start in range(0, len(texts), 1000):  # in batches, as a knowledge base builds
        builder.add(texts[start : start + 1000])
    built = builder.finish()._retriever
    assert isinstance(built, FlatBM25)
    _same_arrays(built, _reference(settings, texts))


def test_other_corpora_and_back_ends_are_built_by_bm25s(texts: list[str]) -> None:
    """A list of token-id lists, or bm25s's scipy back end, goes to bm25s's own construction
    (and the same flat corpus iterated as lists gives the same matrix)."""
    settings = BM25Index()
    tokens = settings._tokenizer().tokenize(
        texts[:500], update_vocab=True, return_as="tuple", show_progress=False
    )
    reference = bm25s.BM25(method="lucene")
    reference.index(tokens, show_progress=False)
    as_lists = FlatBM25(method="lucene")
    as_lists.index(tokens, show_progress=False)
    _same_arrays(as_lists, reference)

    lengths = np.array([len(ids) for ids in tokens.ids], dtype=np.int64)
    flat = FlatTokens(np.array([t for ids in tokens.ids for t in ids], dtype=np.int32), lengths)
    assert list(flat) == [list(ids) for ids in tokens.ids]
    scipy_backend = FlatBM25(method="lucene", csc_backend="scipy")
    scipy_backend.index(bm25s.tokenization.Tokenized(flat, tokens.vocab), show_progress=False)
    scipy_reference = bm25s.BM25(method="lucene", csc_backend="scipy")
    scipy_reference.index(tokens, show_progress=False)
    _same_arrays(scipy_backend, scipy_reference)


def test_term_pairs_are_sorted_by_term_then_document_with_their_counts() -> None:
    ids = np.array([5, 1, 5, 2, 1, 1, 0], dtype=np.int32)  # documents [5 1 5] [2 1] [] [1 0]
    lengths = np.array([3, 2, 0, 2], dtype=np.int64)
    pairs = term_pairs(ids, lengths)
    assert pairs.terms.tolist() == [0, 1, 1, 1, 2, 5]
    assert pairs.documents.tolist() == [3, 0, 1, 3, 1, 0]
    assert pairs.counts.tolist() == [1, 1, 1, 1, 1, 2]
    empty = term_pairs(np.zeros(0, np.int32), np.zeros(2, np.int64))
    assert len(empty.terms) == len(empty.documents) == len(empty.counts) == 0
