"""The bm25 index's word splitter finds exactly the words of bm25s's default pattern
(`\\b\\w\\w+\\b`), so its tokens, vocabulary and scores are bm25s's own."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import Stemmer
from bm25s.tokenization import Tokenizer

from heta_eval.kb.index.bm25 import BM25Index, split_words

BM25S_WORDS = re.compile(r"(?u)\b\w\w+\b").findall
# ASCII letters, digits, `_`, punctuation, every ASCII whitespace (including \x1c-\x1f),
# Latin-1, combining marks, CJK, Arabic digits, superscripts and Unicode line separators.
ALPHABET = (
    "aZ09_ -.,;'\"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0é\u0301ß日本\u2028\u00b2\u0661\u0662x"
)


def test_the_same_words_as_bm25s_on_random_text() -> None:
    rng = random.Random(0)
    for _ in range(20_000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 30)))
        assert split_words(text) == BM25S_WORDS(text), repr(text)


def test_the_same_tokens_and_vocabulary_as_bm25s_on_scifact(scifact_dir: Path) -> None:
    texts = []
    with (scifact_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            texts.append(f"{row['title']}\n{row['text']}")
    queries = [
        json.loads(line)["text"]
        for line in (scifact_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    ours = BM25Index()._tokenizer()
    theirs = Tokenizer(stemmer=Stemmer.Stemmer("english"), stopwords="en")
    for tokenizer in (ours, theirs):
        tokenizer.tokenize(texts, update_vocab=True, return_as="tuple", show_progress=False)
    assert ours.word_to_id == theirs.word_to_id and ours.stem_to_sid == theirs.stem_to_sid
    assert [split_words(t.lower()) for t in texts] == [BM25S_WORDS(t.lower()) for t in texts]
    mine = ours.tokenize(queries, update_vocab=False, return_as="ids", show_progress=False)
    reference = theirs.tokenize(queries, update_vocab=False, return_as="ids", show_progress=False)
    assert mine == reference
