"""bm25s's score matrix, built from a corpus's token ids held in one flat array.

bm25s builds its index document by document in Python: a set and a Counter of each
document's token ids, a few small numpy calls per document, then an argsort of every
(term, document) pair: half of a large build (docs/performance.md). `FlatBM25` is
bm25s's `BM25` (bm25s documents `build_index_from_ids` as the method to override) whose
construction, given a `FlatTokens` corpus, sorts the corpus's (term, document) keys once in
place and computes every score at once with bm25s's own idf and term-frequency functions.

The result is bm25s's, array for array and bit for bit
(tests/unit/kb/index/test_bm25_matrix.py compares them for each method): the pairs come
out in the order bm25s's CSC construction gives them (by term, then by document), and each
score is computed from the same float64 operands with
the same operations. The last point depends on NumPy's promotion rules (NumPy 2: a float64
scalar and a float32 array give float64, which is what an array of per-pair float64 values
gives too); under other rules, or bm25s's scipy back end, the construction is bm25s's own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import bm25s
import numpy as np
from bm25s import scoring

# Pairs scored per numpy call: bounds the temporary float64 arrays (~8 MB each) at any size.
_PAIR_BLOCK = 1 << 20
# Documents whose (term, document) keys are made per numpy call.
_DOCUMENT_BLOCK = 1 << 16


class FlatTokens:
    """Every document's token ids, in one int32 array, and each document's token count.

    Iterating gives each document's ids as a list, which is what bm25s's own construction
    reads; `FlatBM25` reads the arrays.
    """

    _BLOCK = 4096

    def __init__(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        self.ids = ids
        self.lengths = lengths

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self) -> Iterator[list[int]]:
        lengths = self.lengths
        start = 0
        for first in range(0, len(lengths), self._BLOCK):
            sizes = lengths[first : first + self._BLOCK].tolist()
            stop = start + sum(sizes)
            block = self.ids[start:stop].tolist()
            at = 0
            for size in sizes:
                yield block[at : at + size]
                at += size
            start = stop


class TermPairs(NamedTuple):
    """A corpus's distinct (term, document) pairs, by term and then by document."""

    terms: np.ndarray  # int32
    documents: np.ndarray  # int32
    counts: np.ndarray  # int32: the term's frequency in the document


def term_pairs(ids: np.ndarray, lengths: np.ndarray) -> TermPairs:
    """The distinct (term, document) pairs of the corpus with their counts, from one in-place
    sort of 64-bit keys (term in the high half, document in the low half)."""
    keys = np.empty(len(ids), dtype=np.int64)
    ends = np.cumsum(lengths)
    for first in range(0, len(lengths), _DOCUMENT_BLOCK):
        last = min(first + _DOCUMENT_BLOCK, len(lengths))
        start = int(ends[first - 1]) if first else 0
        stop = int(ends[last - 1])
        block = keys[start:stop]
        np.left_shift(ids[start:stop], 32, out=block, dtype=np.int64)
        block |= np.repeat(np.arange(first, last, dtype=np.int64), lengths[first:last])
    keys.sort()
    if not len(keys):
        empty = np.zeros(0, dtype=np.int32)
        return TermPairs(empty, empty, np.zeros(0, dtype=np.int32))
    # Steps that keep few arrays alive at once: at a million documents each of these arrays
    # is hundreds of MB.
    new = np.empty(len(keys), dtype=bool)
    new[0] = True
    np.not_equal(keys[1:], keys[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    del new
    counts = np.empty(len(starts), dtype=np.int32)
    np.subtract(starts[1:], starts[:-1], out=counts[:-1], casting="unsafe")
    counts[-1] = len(keys) - starts[-1]
    keys = keys[starts]
    del starts
    documents = np.empty(len(keys), dtype=np.int32)
    np.bitwise_and(keys, 0xFFFFFFFF, out=documents, casting="unsafe")
    keys >>= 32
    terms = keys.astype(np.int32)
    return TermPairs(terms, documents, counts)


def nep50_promotion() -> bool:
    """Whether a float64 scalar and a float32 array give float64 (NumPy 2's rules), as an
    array of float64 values and a float32 array always do."""
    return (np.float64(1.0) + np.zeros(1, dtype=np.float32)).dtype == np.float64


def pair_scores(
    retriever: bm25s.BM25,
    pairs: TermPairs,
    lengths: np.ndarray,
    average_length: np.floating[Any],
    idf: np.ndarray,
    nonoccurrence: np.ndarray | None,
) -> np.ndarray:
    """Each pair's score as bm25s computes it for a document: the term-frequency component
    of the document's length (bm25s's function for the method) times the term's idf, less
    the term's non-occurrence score for BM25L and BM25+."""
    tfc_of = scoring._select_tfc_scorer(retriever.method)
    scores = np.empty(len(pairs.terms), dtype=retriever.dtype)
    for start in range(0, len(scores), _PAIR_BLOCK):
        stop = start + _PAIR_BLOCK
        terms = pairs.terms[start:stop]
        tfc = tfc_of(
            tf_array=pairs.counts[start:stop].astype(retriever.dtype),
            l_d=lengths[pairs.documents[start:stop]],
            l_avg=average_length,
            k1=retriever.k1,
            b=retriever.b,
            delta=retriever.delta,
        )
        values = idf[terms] * tfc
        if nonoccurrence is not None:
            values -= nonoccurrence[terms]
        scores[start:stop] = values
    return scores


class FlatBM25(bm25s.BM25):
    """bm25s's BM25 that builds its score matrix from a `FlatTokens` corpus in whole-array
    steps (see the module's docstring); any other corpus is built by bm25s itself."""

    def build_index_from_ids(
        self,
        unique_token_ids: Sequence[int],
        corpus_token_ids: Any,
        show_progress: bool = True,
        leave_progress: bool = False,
    ) -> dict[str, Any]:
        if not self._flat_applies(unique_token_ids, corpus_token_ids):
            return super().build_index_from_ids(
                unique_token_ids, corpus_token_ids, show_progress, leave_progress
            )
        lengths = corpus_token_ids.lengths
        average_length = lengths.mean()  # as bm25s: the mean of an int64 array
        documents, vocabulary = len(lengths), len(unique_token_ids)
        pairs = term_pairs(corpus_token_ids.ids, lengths)
        frequencies = np.bincount(pairs.terms, minlength=vocabulary)
        doc_frequencies = dict(enumerate(frequencies.tolist()))
        self.nonoccurrence_array = None
        if self.method in self.methods_requiring_nonoccurrence:
            self.nonoccurrence_array = scoring._build_nonoccurrence_array(
                doc_frequencies=doc_frequencies,
                n_docs=documents,
                compute_idf_fn=scoring._select_idf_scorer(self.idf_method),
                calculate_tfc_fn=scoring._select_tfc_scorer(self.method),
                l_d=average_length,
                l_avg=average_length,
                k1=self.k1,
                b=self.b,
                delta=self.delta,
                dtype=self.dtype,
            )
        idf = scoring._build_idf_array(
            doc_frequencies=doc_frequencies,
            n_docs=documents,
            compute_idf_fn=scoring._select_idf_scorer(self.idf_method),
            dtype=self.dtype,
        )
        data = pair_scores(self, pairs, lengths, average_length, idf, self.nonoccurrence_array)
        indptr = np.zeros(vocabulary + 1, dtype=np.int64)
        np.cumsum(frequencies, out=indptr[1:])
        indices = pairs.documents.astype(self.int_dtype, copy=False)
        return {"data": data, "indices": indices, "indptr": indptr, "num_docs": documents}

    def _flat_applies(self, unique_token_ids: Sequence[int], corpus: Any) -> bool:
        """A flat corpus of at least one document whose token ids are 0..n-1 (bm25s's
        tokenizer numbers them so), with bm25s's NumPy back end and NumPy 2's promotion."""
        if not isinstance(corpus, FlatTokens) or not len(corpus) or not len(unique_token_ids):
            return False
        # bm25s versions before its NumPy back end build with scipy (other index dtypes).
        if getattr(self, "csc_backend", None) != "numpy" or not nep50_promotion():
            return False
        vocabulary = len(unique_token_ids)
        if sorted(unique_token_ids) != list(range(vocabulary)):
            return False
        return not len(corpus.ids) or int(corpus.ids.max()) < vocabulary
