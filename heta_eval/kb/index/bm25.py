"""BM25 retrieval with the bm25s library (sparse, vectorised scoring)."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator

from heta_eval.kb.documents import Chunk
from heta_eval.kb.index.base import Hits

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


def split_words(text: str) -> list[str]:
    r"""The words bm25s's default splitter finds in `text`: runs of two or more `\w`."""
    if text.isascii():
        return [word for word in text.translate(_ASCII_SPACES).split() if len(word) > 1]
    return _WORDS(text)


class BM25Index:
    """Builds a BM25 index over chunk texts with bm25s.

    Tokenisation follows bm25s: lower-cased `\\w\\w+` tokens, stopwords removed (`"en"`, a
    list, or None), stemmed with PyStemmer when `stemmer` names a language (None disables
    it). `k1`, `b`, `delta` and `method` are bm25s's own parameters.
    """

    def __init__(
        self,
        k1: float = 1.5,
        b: float = 0.75,
        delta: float = 0.5,
        method: Bm25Method = "lucene",
        stemmer: StemmerLanguage | None = "english",
        stopwords: StopwordLanguage | list[str] | None = "en",
    ) -> None:
        if k1 < 0:
            raise ValueError(f"k1 must be >= 0, got {k1}")
        if not 0 <= b <= 1:
            raise ValueError(f"b must be within [0, 1], got {b}")
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

    def build(self, chunks: Sequence[Chunk]) -> BuiltBM25Index:
        """Tokenise and index `chunks`; positions in the result refer to this sequence."""
        import bm25s

        # bm25s sets its own logger to DEBUG; keep its per-build chatter out of run logs.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        tokenizer = self._tokenizer()
        tokens = tokenizer.tokenize(
            [c.text for c in chunks], update_vocab=True, return_as="tuple", show_progress=False
        )
        retriever = bm25s.BM25(k1=self.k1, b=self.b, delta=self.delta, method=self.method)
        retriever.index(tokens, show_progress=False)
        return BuiltBM25Index(tokenizer, retriever, len(chunks))

    def load(self, directory: Path) -> BuiltBM25Index:
        """An index saved by `BuiltBM25Index.save`, with this builder's tokenizer settings."""
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        tokenizer = self._tokenizer()
        tokenizer.load_vocab(str(directory))
        retriever = bm25s.BM25.load(str(directory))
        size = int(retriever.scores["num_docs"])
        return BuiltBM25Index(tokenizer, retriever, size)


class BuiltBM25Index:
    """A queryable BM25 index; chunks that share no term with the query are not returned."""

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
