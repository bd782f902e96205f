"""BM25 over a corpus split into shards, with the statistics of the whole corpus.

A sharded BM25 index scores exactly as one bm25s index over every chunk: each shard
tokenises its chunks with the builder's tokenizer and reports its terms' document
frequencies and its chunks' lengths (`ShardTerms`, pass 1); the driver adds them up
(`CorpusTerms`: number of chunks, document frequency of each term, average length); each
shard then computes its score matrix with bm25s's own scoring functions from those global
statistics (`ShardBm25.index`, pass 2). A query is tokenised once against the whole
corpus's vocabulary (`QueryTokenizer.terms`, as bm25s's tokenizer and `retrieve` do),
each shard adds its terms' scores in the query's order (as bm25s's
`_compute_relevance_from_scores`), so every score is the unsharded one bit for bit, and
the per-shard top-k are merged by score (`merge_hits`).

Supported: bm25s's `robertson`, `lucene` and `atire` methods (`bm25l` and `bm25+` add a
non-occurrence score that is not split by shard: refused by `check_shardable_bm25`).
"""

from __future__ import annotations

import heapq
import logging
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heta_eval.kb.index.base import Hits
from heta_eval.kb.index.bm25 import BM25Index, split_words
from heta_eval.kb.index.bm25_matrix import FlatTokens, nep50_promotion, pair_scores, term_pairs

SHARDABLE_METHODS = ("robertson", "lucene", "atire")
EMPTY_TERM = ""  # bm25s's token of a text without any (it scores empty chunks)


class ShardingError(ValueError):
    """An index or recipe that cannot be split into shards with exact results."""


def check_shardable_bm25(builder: object, where: str) -> BM25Index:
    """`builder` if it is a BM25Index whose scores can be computed shard by shard."""
    if type(builder) is not BM25Index:
        raise ShardingError(
            f"runner.shards: {where} is {type(builder).__module__}.{type(builder).__name__}; "
            "only BM25 indexes (heta_eval.kb.BM25Index) can be split into shards: use a bm25 "
            "recipe or runner.shards=null"
        )
    if builder.method not in SHARDABLE_METHODS:
        raise ShardingError(
            f"runner.shards: {where}.method={builder.method}; sharding supports the BM25 methods "
            f"{', '.join(SHARDABLE_METHODS)} (bm25l and bm25+ add a non-occurrence score "
            "over the whole vocabulary)"
        )
    return builder


def make_tokenizer(builder: BM25Index):  # type: ignore[no-untyped-def]
    """A bm25s tokenizer with `builder`'s settings (lower-cased words, stopwords, stemmer)."""
    import Stemmer
    from bm25s.tokenization import Tokenizer

    stemmer = Stemmer.Stemmer(builder.stemmer) if builder.stemmer else None
    return Tokenizer(stemmer=stemmer, stopwords=builder.stopwords or [], splitter=split_words)


@dataclass
class ShardTerms:
    """Pass 1 of one shard: its terms (by local id), their document frequencies in the
    shard, and the number and summed token length of its chunks."""

    terms: list[str]
    frequencies: np.ndarray
    chunks: int
    length: int


@dataclass
class CorpusTerms:
    """The statistics of the whole corpus, merged from every shard's `ShardTerms`."""

    frequencies: dict[str, int] = field(default_factory=dict)
    chunks: int = 0
    length: int = 0

    @classmethod
    def merge(cls, shards: Iterable[ShardTerms]) -> CorpusTerms:
        """Add up the shards' document frequencies, chunk counts and lengths."""
        merged = cls()
        frequencies = merged.frequencies
        for shard in shards:
            merged.chunks += shard.chunks
            merged.length += shard.length
            for term, df in zip(shard.terms, shard.frequencies.tolist(), strict=True):
                frequencies[term] = frequencies.get(term, 0) + df
        return merged

    @property
    def average_length(self) -> np.float64:
        """Mean token length of a chunk, as bm25s computes it (`np.mean` of the lengths:
        an exact integer sum divided once)."""
        return np.float64(self.length) / np.float64(self.chunks)

    def frequencies_of(self, terms: Sequence[str]) -> np.ndarray:
        """The corpus-wide document frequency of each of a shard's `terms`."""
        return np.fromiter((self.frequencies[t] for t in terms), dtype=np.int64, count=len(terms))


class QueryTokenizer:
    """Tokenises queries as bm25s's tokenizer and `retrieve` do against an index of the
    whole corpus: words lower-cased, without stopwords, stemmed, kept when the corpus has
    them; the empty term when none is left (bm25s's fallback)."""

    def __init__(self, builder: BM25Index) -> None:
        tokenizer = make_tokenizer(builder)
        self.lower = tokenizer.lower
        self.splitter = tokenizer.splitter
        self.stopwords = frozenset(tokenizer.stopwords or ())
        self.stem = tokenizer.stemmer

    def terms(self, text: str, corpus: CorpusTerms) -> list[str]:
        """The terms of `text` that the unsharded index would score, in the query's order."""
        known = corpus.frequencies
        terms = []
        for word in self.splitter(text.lower() if self.lower else text):
            if word in self.stopwords:
                continue
            term = self.stem(word) if self.stem is not None else word
            if term in known:
                terms.append(term)
        return terms or [EMPTY_TERM]


class ShardBm25:
    """One shard's BM25 index: its chunks tokenised (pass 1), then scored with the whole
    corpus's statistics (pass 2), then queried with terms of the whole corpus."""

    def __init__(self, builder: BM25Index) -> None:
        self.builder = builder
        self._tokens: np.ndarray | None = None
        self._bounds: np.ndarray | None = None
        self._pairs = 0
        self._vocabulary: dict[str, int] = {}
        self._retriever: Any = None
        self.size = 0

    def tokenize(self, texts: Sequence[str]) -> ShardTerms:
        """Pass 1: tokenise the shard's chunk texts as `BM25Index.build` does, keeping the
        token ids in one flat int32 array (4 bytes a token, not a Python list per chunk)."""
        tokenizer = make_tokenizer(self.builder)
        stream = tokenizer.tokenize(
            texts, update_vocab=True, return_as="stream", show_progress=False
        )
        flat = array("i")
        lengths = array("q")
        counts: Counter[int] = Counter()
        for ids in stream:
            flat.extend(ids)
            lengths.append(len(ids))
            counts.update(set(ids))
        vocabulary = tokenizer.get_vocab_dict()  # term -> local id, "" included
        terms = [""] * len(vocabulary)
        for term, local in vocabulary.items():
            terms[local] = term
        frequencies = np.zeros(len(terms), dtype=np.int64)
        if counts:
            frequencies[np.fromiter(counts.keys(), dtype=np.int64)] = np.fromiter(
                counts.values(), dtype=np.int64
            )
        self._tokens = np.frombuffer(flat, dtype=np.int32)
        self._bounds = np.concatenate([[0], np.cumsum(np.frombuffer(lengths, dtype=np.int64))])
        self._pairs = int(frequencies.sum())  # (chunk, term) pairs: the matrix's entries
        self._vocabulary, self.size = vocabulary, len(lengths)
        return ShardTerms(terms, frequencies, len(lengths), int(self._bounds[-1]))

    def index(self, frequencies: np.ndarray, chunks: int, average_length: np.float64) -> None:
        """Pass 2: the shard's score matrix with the corpus's document frequencies (one per
        local term id), number of chunks and average length, computed by bm25s's own
        functions so that each score equals the unsharded one."""
        import bm25s
        from bm25s import scoring

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        if self._tokens is None:
            raise RuntimeError("ShardBm25.index before tokenize")
        builder = self.builder
        retriever = bm25s.BM25(
            k1=builder.k1, b=builder.b, delta=builder.delta, method=builder.method
        )
        idf_of = scoring._select_idf_scorer(retriever.idf_method)
        idf = np.zeros(len(frequencies), dtype=retriever.dtype)
        for local, df in enumerate(frequencies.tolist()):
            if df != 0:
                idf[local] = idf_of(df, N=chunks)
        lengths = np.diff(self._bounds)
        if nep50_promotion():  # bm25s's matrix in whole-array steps (bm25_matrix.py)
            pairs = term_pairs(self._tokens, lengths)
            data = pair_scores(retriever, pairs, lengths, average_length, idf, None)
            indptr = np.zeros(len(frequencies) + 1, dtype=np.int64)
            np.cumsum(np.bincount(pairs.terms, minlength=len(frequencies)), out=indptr[1:])
            indices = pairs.documents
        else:
            scores, rows, cols = scoring._build_scores_and_indices_for_matrix(
                corpus_token_ids=FlatTokens(self._tokens, lengths),
                idf_array=idf,
                avg_doc_len=average_length,
                # bm25s sizes its arrays by the sum of these: the shard's (chunk, term) pairs
                doc_frequencies={0: self._pairs},
                k1=retriever.k1,
                b=retriever.b,
                delta=retriever.delta,
                nonoccurrence_array=None,
                method=retriever.method,
                dtype=retriever.dtype,
                int_dtype=retriever.int_dtype,
                show_progress=False,
            )
            data, indices, indptr = retriever._np_csc(
                data=scores, rows=rows, cols=cols, shape=(self.size, len(frequencies))
            )
        retriever.scores = {
            "data": data.astype(retriever.dtype),
            "indices": indices,
            "indptr": indptr,
            "num_docs": self.size,
        }
        retriever.nonoccurrence_array = None
        self._retriever = retriever
        self._tokens = self._bounds = None  # the matrix holds what queries need

    def search(self, queries: Sequence[Sequence[str]], top_k: int) -> list[Hits]:
        """Each query's best `top_k` chunks of this shard (local positions) with a positive
        score, for terms from `QueryTokenizer.terms`."""
        if self._retriever is None or self.size == 0:
            return [[] for _ in queries]
        from bm25s.selection import topk

        retriever = self._retriever
        scores = retriever.scores
        k = min(top_k, self.size)
        found = []
        for terms in queries:
            ids = [self._vocabulary[t] for t in terms if t in self._vocabulary]
            if not ids:  # no term of the query in this shard: every score is 0
                found.append([])
                continue
            row = retriever._compute_relevance_from_scores(
                data=scores["data"],
                indptr=scores["indptr"],
                indices=scores["indices"],
                num_docs=self.size,
                query_tokens_ids=np.asarray(ids, dtype=retriever.int_dtype),
                dtype=np.dtype(retriever.dtype),
            )
            values, positions = topk(row, k=k, backend="numpy", sorted=True)
            found.append(
                [(int(p), float(s)) for p, s in zip(positions, values, strict=True) if s > 0]
            )
        return found


def merge_hits(per_shard: Sequence[Sequence[tuple[int, float, Any]]], top_k: int) -> list[Any]:
    """The best `top_k` of every shard's hits `(global position, score, payload)`, by score
    descending and equal scores by position ascending (a deterministic order: the
    unsharded bm25s's order of equal scores is numpy's partition order)."""
    best = heapq.nsmallest(
        top_k, (hit for hits in per_shard for hit in hits), key=lambda hit: (-hit[1], hit[0])
    )
    return best
