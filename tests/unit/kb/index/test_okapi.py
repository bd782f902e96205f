"""recipe=uda_baseline's index, worked by hand: Okapi BM25 scored as rank_bm25 does."""

from __future__ import annotations

import math

import pytest

from heta_eval.kb.documents import Chunk
from heta_eval.kb.index.okapi import OkapiBM25Index, okapi_tokens


def _chunks(*texts: str) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=f"d#{i}",
            chunk_index=i,
            document_id="d",
            source_key="raw/d",
            text=t,
            start_char=0,
            end_char=len(t),
        )
        for i, t in enumerate(texts)
    ]


def test_okapi_scores_as_rank_bm25_does() -> None:
    assert okapi_tokens("The U.S. economy, in 2019!") == ["the", "us", "economy", "in", "2019"]
    index = OkapiBM25Index(k1=1.5, b=0.75, epsilon=0.25).build(_chunks("a b", "a c", "d"))
    # N = 3, lengths 2, 2, 1 (mean 5/3). idf(b) = ln(2.5 / 1.5); "a" is in 2 of 3 chunks, so
    # its idf ln(1.5 / 2.5) < 0 becomes 0.25 x the mean idf (-x + 3x) / 4 = x / 2, x = ln(5/3).
    x = math.log(5 / 3)
    tf_part = 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / (5 / 3)))
    (hits,) = index.search(["b"], top_k=3)
    assert hits[0][0] == 0 and hits[0][1] == pytest.approx(x * tf_part)
    # Every chunk is ranked, zero scores included, ties in chunk order (the baseline's top-k).
    assert [p for p, _ in hits] == [0, 1, 2] and hits[1][1] == hits[2][1] == 0.0
    (hits,) = index.search(["a a"], top_k=2)  # a repeated query word counts twice
    assert [p for p, _ in hits] == [0, 1]
    assert hits[0][1] == pytest.approx(2 * 0.25 * (x / 2) * tf_part)


def test_okapi_index_saves_and_loads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    builder = OkapiBM25Index()
    built = builder.build(_chunks("kelp forests", "coral reefs", "kelp and otters"))
    built.save(tmp_path / "okapi")
    loaded = builder.load(tmp_path / "okapi")
    assert loaded.search(["kelp otters"], 3) == built.search(["kelp otters"], 3)
