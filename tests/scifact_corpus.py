"""SciFact's first documents in an object store, with ties, and queries: the corpus of the
tests that compare queries answered together with queries answered one at a time."""

from __future__ import annotations

import json
from pathlib import Path

from heta_eval.kb import LocalObjectStore, RawSource

DOCUMENTS = 300
QUERIES = 60


def tied_corpus(root: Path, scifact: Path) -> tuple[LocalObjectStore, list[RawSource], list[str]]:
    """300 SciFact documents, each of the first 30 stored twice (equal scores: ties), in a
    store at `root`, and 60 queries, among them queries with no known word and one naming a
    document's id."""
    store = LocalObjectStore(root)
    sources = []
    with (scifact / "corpus.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line, _ in zip(handle, range(DOCUMENTS), strict=False)]
    for copy in ("", "-copy"):
        for row in rows if not copy else rows[:30]:
            doc = f"{row['_id']}{copy}"
            key = f"raw/benchmarks/scifact/test/{doc}/{doc}.txt"
            store.put(key, f"{row['title']}\n{row['text']}".encode())
            sources.append(RawSource(key=key, document_id=doc))
    with (scifact / "queries.jsonl").open(encoding="utf-8") as handle:
        lines = zip(handle, range(QUERIES), strict=False)
        queries = [json.loads(line)["text"] for line, _ in lines]
    queries += ["zzqx wvvk", rows[3]["title"], rows[3]["title"]]
    return store, sources, queries
