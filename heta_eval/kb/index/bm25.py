"""BM25 retrieval with the bm25s library (sparse, vectorised scoring)."""

from __future__ import annotations

import logging
import re
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import AfterValidator

from heta_eval.config.ranges import Range
from heta_eval.kb.documents import Chunk
from heta_eval.kb.index.base import BaseIndexBuilder, BaseSearchIndex, Hits
from heta_eval.kb.index.bm25_matrix import FlatBM25, FlatTokens

Bm25Method = Literal["robertson", "lucene", "atire", "bm25l", "bm25+"]

# bm25s splits on `\b\w\w+\b`. Without the word boundaries the pattern finds the same words
# (a greedy run of two or more word characters always ends at one) a fifth faster; on ASCII
# text, mapping every other character to a space and splitting is faster still.
_WORDS = re.compile(r"\w\w+").findall
_ASCII_SPACES = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) == "_")}
)


# The stopword lists bm25s ships, by the names its tokenizer accepts (a list of words works too).
STOPWORD_LANGUAGES = (
    "english", "en", "english_plus", "en_plus", "german", "de", "dutch", "nl", "french", "fr",
    "spanish", "es", "portuguese", "pt", "italian", "it", "russian", "ru", "swedish", "sv",
    "norwegian", "no", "chinese", "zh", "turkish", "tr", "korean", "ko", "danish", "da",
)  # fmt: skip


def stemmer_languages() -> list[str]:
    """The languages PyStemmer (the stemmer bm25s uses) has an algorithm for."""
    import Stemmer

    return sorted(Stemmer.algorithms())


def check_stemmer(value: str) -> str:
    """`value` if PyStemmer knows it, else ValueError listing the languages it knows."""
    known = stemmer_languages()
    if value not in known:
        raise ValueError(
            f"{value!r} is not a stemmer language PyStemmer knows; allowed: "
            f"{', '.join(known)} (or null for no stemming)"
        )
    return value


def check_stopwords(value: str) -> str:
    """`value` if bm25s has a stopword list by that name, else ValueError listing them."""
    if value not in STOPWORD_LANGUAGES:
        raise ValueError(
            f"{value!r} is not a stopword list bm25s has; allowed: "
            f"{', '.join(STOPWORD_LANGUAGES)} (or a list of words, or null for none)"
        )
    return value


StemmerLanguage = Annotated[str, AfterValidator(check_stemmer)]
StopwordLanguage = Annotated[str, AfterValidator(check_stopwords)]

# Published tunings keep k1 under 3 and delta under 2; beyond these bounds BM25 only counts
# raw term frequencies (k1) or matching terms (delta), and k1=1e100 overflows to no results.
K1_RANGE = Range(0, 100)
B_RANGE = Range(0, 1)
DELTA_RANGE = Range(0, 10)
K1 = Annotated[float, AfterValidator(K1_RANGE)]
B = Annotated[float, AfterValidator(B_RANGE)]
Delta = Annotated[float, AfterValidator(DELTA_RANGE)]


def split_words(text: str) -> list[str]:
    r"""The words bm25s's default splitter finds in `text`: runs of two or more `\w`."""
    if text.isascii():
        return [word for word in text.translate(_ASCII_SPACES).split() if len(word) > 1]
    return _WORDS(text)


class BM25Index(BaseIndexBuilder):
    """Builds a BM25 index over chunk texts with bm25s.

    Tokenisation follows bm25s: lower-cased `\\w\\w+` tokens, stopwords removed (`"en"`, a
    list, or None), stemmed with PyStemmer when `stemmer` names a language (None disables
    it). `k1`, `b`, `delta` and `method` are bm25s's own parameters.
    """

    def __init__(
        self,
        k1: K1 = 1.5,
        b: B = 0.75,
        delta: Delta = 0.5,
        method: Bm25Method = "lucene",
        stemmer: StemmerLanguage | None = "english",
        stopwords: StopwordLanguage | list[str] | None = "en",
    ) -> None:
        K1_RANGE.check("k1", k1)
        B_RANGE.check("b", b)
        DELTA_RANGE.check("delta", delta)
        if method not in ("robertson", "lucene", "atire", "bm25l", "bm25+"):
            raise ValueError(f"unknown BM25 method {method!r}")
        if stemmer is not None:
            check_stemmer(stemmer)
        if isinstance(stopwords, str):
            check_stopwords(stopwords)
        self.k1, self.b, self.delta, self.method = k1, b, delta, method
        self.stemmer = stemmer
        self.stopwords = stopwords

    def _tokenizer(self):  # type: ignore[no-untyped-def]
        import Stemmer
        from bm25s.tokenization import Tokenizer

        stemmer = Stemmer.Stemmer(self.stemmer) if self.stemmer else None
        return Tokenizer(stemmer=stemmer, stopwords=self.stopwords or [], splitter=split_words)

    def start(self) -> BM25Builder:
        """A builder that takes chunk texts batch by batch (`add`) and indexes them once all
        are in (`finish`): only their token ids are kept in between, 4 bytes a token."""
        return BM25Builder(self)

    def build(self, chunks: Sequence[Chunk]) -> BuiltBM25Index:
        """Tokenise and index `chunks`; positions in the result refer to this sequence."""
        builder = self.start()
        builder.add(chunk.text for chunk in chunks)
        return builder.finish()

    def load(self, directory: Path, *, mmap: bool = True) -> BuiltBM25Index:
        """An index saved by `BuiltBM25Index.save`, with this builder's tokenizer settings.

        With `mmap` (the default) bm25s memory-maps the score matrix's three arrays
        (`data`, `indices`, `indptr`) read-only instead of reading them into memory: loading
        costs the vocabulary, and queries read the columns of their terms from the page cache.
        """
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        tokenizer = self._tokenizer()
        tokenizer.load_vocab(str(directory))
        retriever = bm25s.BM25.load(str(directory), mmap=mmap)
        size = int(retriever.scores["num_docs"])
        return BuiltBM25Index(tokenizer, retriever, size)


class BM25Builder:
    """Builds one BM25 index from texts given in batches, in their order.

    Each batch is tokenised as it comes (bm25s's Tokenizer, updating its vocabulary) and only
    the token ids are kept, in one int32 array; `finish` builds bm25s's index from them
    (`bm25_matrix.FlatBM25`), the index `bm25s.BM25.index` builds from the same texts
    tokenised at once.
    """

    def __init__(self, settings: BM25Index) -> None:
        self._settings = settings
        self._tokenizer = settings._tokenizer()
        self._ids = array("i")
        self._lengths = array("q")

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, texts: Iterable[str]) -> None:
        """Tokenise `texts`, the next documents of the index."""
        ids, lengths = self._ids, self._lengths
        for doc_ids in self._tokenizer.streaming_tokenize(texts, update_vocab=True):
            ids.extend(doc_ids)
            lengths.append(len(doc_ids))

    def finish(self) -> BuiltBM25Index:
        """The index over every text added (positions in the order they were added)."""
        import numpy as np

        # bm25s sets its own logger to DEBUG; keep its per-build chatter out of run logs.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        settings = self._settings
        retriever = FlatBM25(
            k1=settings.k1, b=settings.b, delta=settings.delta, method=settings.method
        )
        ids = np.frombuffer(self._ids, dtype=np.int32) if self._ids else np.zeros(0, np.int32)
        lengths = (
            np.frombuffer(self._lengths, dtype=np.int64) if self._lengths else np.zeros(0, np.int64)
        )
        # An object with `ids` and `vocab`, as bm25s's Tokenized: the vocabulary is the
        # tokenizer's own dictionary, as `tokenize(..., return_as="tuple")` gives it.
        corpus = _Tokenized(FlatTokens(ids, lengths), self._tokenizer.get_vocab_dict())
        retriever.index(corpus, show_progress=False)
        size = len(lengths)
        del corpus, ids, lengths
        self._ids, self._lengths = array("i"), array("q")
        return BuiltBM25Index(self._tokenizer, retriever, size)


class _Tokenized(NamedTuple):
    ids: Any  # bm25_matrix.FlatTokens
    vocab: dict[str, int]


class BuiltBM25Index(BaseSearchIndex):
    """A queryable BM25 index; chunks that share no term with the query are not returned."""

    # Queries searched together get the hits, scores and tie order each gets alone: the
    # vocabulary is fixed, and bm25s scores and selects the top k of each query on its own.
    exact_in_batches = True
    persistent = True

    def __init__(self, tokenizer, retriever, size: int) -> None:  # type: ignore[no-untyped-def]
        self._tokenizer = tokenizer
        self._retriever = retriever
        self.size = size

    def save(self, directory: Path) -> None:
        """Write the index and the tokenizer's vocabulary into `directory`."""
        directory.mkdir(parents=True, exist_ok=True)
        self._retriever.save(str(directory))
        self._tokenizer.save_vocab(str(directory))

    def search(self, queries: Sequence[str], top_k: int) -> list[Hits]:
        if not queries or self.size == 0:
            return [[] for _ in queries]
        token_ids = self._tokenizer.tokenize(
            list(queries), update_vocab=False, return_as="ids", show_progress=False
        )
        k = min(top_k, self.size)
        positions, scores = self._retriever.retrieve(token_ids, k=k, show_progress=False)
        return [
            [(int(p), float(s)) for p, s in zip(row_p, row_s, strict=True) if s > 0]
            for row_p, row_s in zip(positions, scores, strict=True)
        ]
