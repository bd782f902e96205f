"""A SciFact subset for the bridge tests: the first test queries, the documents judged for
them and the first documents of the corpus, in BEIR's layout."""

from __future__ import annotations

import json
from pathlib import Path

QUERIES = 20
DOCUMENTS = 800


def scifact_subset(scifact: Path, root: Path, queries: int = QUERIES) -> Path:
    """Write the subset under `root` (corpus.jsonl, queries.jsonl, qrels/test.tsv)."""
    header, *rows = (scifact / "qrels" / "test.tsv").read_text().splitlines()
    chosen: list[str] = []
    kept = [header]
    for row in rows:
        query = row.split("\t")[0]
        if query not in chosen and len(chosen) == queries:
            continue
        if query not in chosen:
            chosen.append(query)
        kept.append(row)
    judged = {row.split("\t")[1] for row in kept[1:]}
    (root / "qrels").mkdir(parents=True)
    (root / "qrels" / "test.tsv").write_text("\n".join(kept) + "\n")
    with (scifact / "corpus.jsonl").open(encoding="utf-8") as source:
        lines = [
            line
            for i, line in enumerate(source)
            if i < DOCUMENTS or json.loads(line)["_id"] in judged
        ]
    (root / "corpus.jsonl").write_text("".join(lines), encoding="utf-8")
    (root / "queries.jsonl").write_text((scifact / "queries.jsonl").read_text())
    return root
