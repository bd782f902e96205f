"""Synthetic BEIR-layout corpora for the scaling benchmark, written once and reused.

Usage: python benchmarks/synthetic.py DOCUMENTS QUERIES [--seed 0] [--root DIR]

Documents have ~150 words (120-180) drawn from a Zipf-distributed vocabulary of 50,000
pronounceable pseudo-words (so stemming and stopwords behave as on text, and term
statistics look like a real corpus). Each query takes 6 words of one document plus 2
random vocabulary words, and judges that document relevant (grade 1). Deterministic for
a seed; written under benchmarks/results/synthetic/ (git-ignored) unless --root says.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS

VOCABULARY = 50_000
ZIPF_EXPONENT = 1.1
_ONSETS = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ou"]


def vocabulary(rng, size: int) -> list[str]:  # type: ignore[no-untyped-def]
    """`size` distinct pseudo-words of 2-4 consonant-vowel syllables."""
    words: dict[str, None] = {}
    while len(words) < size:
        syllables = rng.integers(2, 5)
        onsets = rng.integers(0, len(_ONSETS), syllables)
        vowels = rng.integers(0, len(_VOWELS), syllables)
        words["".join(_ONSETS[o] + _VOWELS[v] for o, v in zip(onsets, vowels, strict=True))] = None
    return list(words)


def write_corpus(directory: Path, documents: int, queries: int, seed: int = 0) -> Path:
    """Write corpus.jsonl, queries.jsonl and qrels/test.tsv into `directory` (if missing)."""
    import numpy as np

    done = directory / ".complete"
    if done.is_file():
        return directory
    rng = np.random.default_rng(seed)
    words = np.array(vocabulary(rng, VOCABULARY))
    ranks = np.arange(1, VOCABULARY + 1, dtype=float)
    weights = ranks**-ZIPF_EXPONENT
    weights /= weights.sum()
    lengths = rng.integers(120, 181, documents)
    draws = rng.choice(VOCABULARY, size=int(lengths.sum()), p=weights)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    (directory / "qrels").mkdir(parents=True, exist_ok=True)
    with (directory / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for i in range(documents):
            text = " ".join(words[draws[bounds[i] : bounds[i + 1]]])
            handle.write(json.dumps({"_id": f"d{i}", "title": f"doc {i}", "text": text}) + "\n")
    targets = rng.integers(0, documents, queries)
    with (
        (directory / "queries.jsonl").open("w", encoding="utf-8") as q_handle,
        (directory / "qrels" / "test.tsv").open("w", encoding="utf-8") as r_handle,
    ):
        r_handle.write("query-id\tcorpus-id\tscore\n")
        for i, target in enumerate(targets):
            own = draws[bounds[target] + rng.integers(0, lengths[target], 6)]
            noise = rng.integers(0, VOCABULARY, 2)
            text = " ".join(words[np.concatenate([own, noise])])
            q_handle.write(json.dumps({"_id": f"q{i}", "text": text}) + "\n")
            r_handle.write(f"q{i}\td{target}\t1\n")
    done.write_text("ok\n")
    return directory


def corpus_dir(documents: int, queries: int, seed: int = 0, root: Path | None = None) -> Path:
    """The corpus for (documents, queries, seed), written on first use."""
    base = root or RESULTS / "synthetic"
    return write_corpus(base / f"d{documents}-q{queries}-s{seed}", documents, queries, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("documents", type=int)
    parser.add_argument("queries", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", type=Path, default=None)
    args = parser.parse_args()
    print(corpus_dir(args.documents, args.queries, args.seed, args.root))


if __name__ == "__main__":
    main()
