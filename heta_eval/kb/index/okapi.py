"""Okapi BM25 as the `rank_bm25` package computes it (UDA's retrieval baseline), in pure Python.

Tokens: the text lower-cased, ASCII punctuation removed, split on whitespace (no stemming, no
stopwords). idf(t) = ln((N - n_t + 0.5) / (n_t + 0.5)); a negative idf (a term in more than
half the chunks) becomes `epsilon` times the mean idf, so a term shared by most chunks of a
small document still counts a little instead of nothing. score = sum over query tokens of
idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg_len)). Every chunk is ranked, zero
scores included (ties keep chunk order), as the baseline takes the top k whatever they score.
"""

from __future__ import annotations

import json
import math
import string
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator

from heta_eval.config.ranges import Range
from heta_eval.kb.documents import Chunk
from heta_eval.kb.index.base import BaseIndexBuilder, BaseSearchIndex, Hits
from heta_eval.kb.index.bm25 import B_RANGE, K1, K1_RANGE, B

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_TOKENS_FILE = "okapi_tokens.json"
EPSILON_RANGE = Range(0, 1)  # a share of the mean idf
Epsilon = Annotated[float, AfterValidator(EPSILON_RANGE)]


def okapi_tokens(text: str) -> list[str]:
    """Lower-cased, punctuation-free, whitespace-separated tokens."""
    return text.lower().translate(_PUNCTUATION).split()


class OkapiBM25Index(BaseIndexBuilder):
    """Builds an Okapi BM25 index (rank_bm25's `BM25Okapi` scoring) over chunk texts."""

    def __init__(self, k1: K1 = 1.5, b: B = 0.75, epsilon: Epsilon = 0.25) -> None:
        K1_RANGE.check("k1", k1)
        B_RANGE.check("b", b)
        EPSILON_RANGE.check("epsilon", epsilon)
        self.k1, self.b, self.epsilon = k1, b, epsilon

    def build(self, chunks: Sequence[Chunk]) -> BuiltOkapiIndex:
        """Tokenise and index `chunks`; positions in the result refer to this sequence."""
        return BuiltOkapiIndex([okapi_tokens(c.text) for c in chunks], self)

    def load(self, directory: Path) -> BuiltOkapiIndex:
        """An index saved by `BuiltOkapiIndex.save`, scored with this builder's settings."""
        tokens = json.loads((directory / _TOKENS_FILE).read_text(encoding="utf-8"))
        return BuiltOkapiIndex(tokens, self)


class BuiltOkapiIndex(BaseSearchIndex):
    """A queryable Okapi BM25 index over tokenised chunks."""

    persistent = True

    def __init__(self, tokens: list[list[str]], settings: OkapiBM25Index) -> None:
        self._tokens = tokens
        self._k1, self._b = settings.k1, settings.b
        self.size = len(tokens)
        self._counts = [Counter(t) for t in tokens]
        self._lengths = [len(t) for t in tokens]
        self._avg_length = sum(self._lengths) / self.size if self.size else 0.0
        frequencies: Counter[str] = Counter()
        for counts in self._counts:
            frequencies.update(counts.keys())
        idf = {t: math.log(self.size - n + 0.5) - math.log(n + 0.5) for t, n in frequencies.items()}
        floor = settings.epsilon * (sum(idf.values()) / len(idf)) if idf else 0.0
        self._idf = {t: (v if v >= 0 else floor) for t, v in idf.items()}

    def save(self, directory: Path) -> None:
        """Write the tokenised chunks into `directory` (statistics are recomputed on load)."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / _TOKENS_FILE).write_text(json.dumps(self._tokens), encoding="utf-8")

    def scores(self, query: str) -> list[float]:
        """The BM25 score of every chunk for `query`."""
        k1, b = self._k1, self._b
        avg = self._avg_length or 1.0
        scores = [0.0] * self.size
        for token in okapi_tokens(query):
            idf = self._idf.get(token)
            if idf is None:
                continue
            for i, counts in enumerate(self._counts):
                tf = counts.get(token)
                if tf:
                    norm = k1 * (1 - b + b * self._lengths[i] / avg)
                    scores[i] += idf * tf * (k1 + 1) / (tf + norm)
        return scores

    def search(self, queries: Sequence[str], top_k: int) -> list[Hits]:
        hits = []
        for query in queries:
            scores = self.scores(query)
            order = sorted(range(self.size), key=lambda i: scores[i], reverse=True)[:top_k]
            hits.append([(i, scores[i]) for i in order])
        return hits
