"""Sharded BM25 (`heta_eval.kb.index.sharded_bm25`): shards that share the corpus's term
statistics score bit for bit as one bm25s index over the whole corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heta_eval.kb.documents import Chunk
from heta_eval.kb.index.bm25 import BM25Index
from heta_eval.kb.index.sharded_bm25 import CorpusTerms, QueryTokenizer, ShardBm25, merge_hits

from ....sharded_runs import same_ranking, synthetic_corpus


@pytest.fixture(scope="module")
def synthetic_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_corpus(tmp_path_factory.mktemp("synthetic"))


@pytest.mark.slow  # three BM25 methods on 2,000 documents, whole and in three shards
def test_shards_score_bit_for_bit_as_one_bm25s_index(synthetic_dir: Path) -> None:
    documents = (synthetic_dir / "corpus.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in documents]
    texts = [f"{r['title']}\n\n{r['text']}" for r in rows]
    texts[10] = "the of and"  # no term after stopwords: bm25s's empty token scores it
    lines = (synthetic_dir / "queries.jsonl").read_text().splitlines()
    queries = [json.loads(line)["text"] for line in lines]
    queries += ["the and", "qqqzzz", "qqqzzz " + queries[0]]  # no known term, then some
    chunks = [
        Chunk(chunk_id=f"c{i}", chunk_index=0, document_id=f"d{i}", source_key=f"k{i}",
              text=t, start_char=0, end_char=len(t))
        for i, t in enumerate(texts)
    ]  # fmt: skip
    bounds = [0, 500, 1300, len(texts)]  # three shards of unequal sizes
    for method in ("lucene", "robertson", "atire"):
        builder = BM25Index(method=method)
        expected = builder.build(chunks).search(queries, 50)
        shards = [ShardBm25(builder) for _ in range(3)]
        terms = [
            s.tokenize(texts[a:b]) for s, a, b in zip(shards, bounds, bounds[1:], strict=False)
        ]
        corpus = CorpusTerms.merge(terms)
        assert corpus.chunks == len(texts)
        for shard, shard_terms in zip(shards, terms, strict=True):
            shard.index(
                corpus.frequencies_of(shard_terms.terms), corpus.chunks, corpus.average_length
            )
        tokenizer = QueryTokenizer(builder)
        query_terms = [tokenizer.terms(q, corpus) for q in queries]
        found = [s.search(query_terms, 50) for s in shards]
        for i, hits in enumerate(expected):
            merged = merge_hits(
                [[(a + p, s, None) for p, s in f[i]] for a, f in zip(bounds, found, strict=False)],
                50,
            )
            got = [(p, s) for p, s, _ in merged]
            same_ranking(hits, got)
            scores = dict(hits)
            assert all(scores[p] == s for p, s in got if p in scores)  # bit for bit
        # A query without a known term scores only the chunk without terms (bm25s's empty
        # token), in the sharded index too; one with a known term does not.
        assert [p for p, _ in expected[-3]] == [p for p, _ in expected[-2]] == [10]
        assert expected[-1] and 10 not in dict(expected[-1])
