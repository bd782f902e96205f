"""A minimal test-local adapter for BEIR's file layout (the real adapter is its own issue).

It reads `corpus.jsonl`, `queries.jsonl` and `qrels/{split}.tsv` and yields one corpus
unit; documents index title and text, qrels become evidence with `relevance` metadata.
"""

from __future__ import annotations

import csv
import json
from collections.abc import AsyncIterator
from pathlib import Path

from heta_eval.evaluators import NDCGAtK, RecallAtK
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkDocument,
    BenchmarkEvidence,
    BenchmarkExpected,
    BenchmarkManifest,
    BenchmarkResource,
    BenchmarkRunUnit,
    BenchmarkWorkspace,
    PreparedBenchmark,
)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        next(rows)
        for query_id, doc_id, score in rows:
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


class LocalBeir:
    """BEIR dataset directory → documents, judged cases and one corpus unit."""

    def __init__(self, root: Path, split: str = "test") -> None:
        self.root = root
        self._manifest = BenchmarkManifest(
            name=f"beir-{root.name}", version="local", split=split, task_type="retrieval"
        )

    @property
    def manifest(self) -> BenchmarkManifest:
        return self._manifest

    def resources(self) -> tuple[BenchmarkResource, ...]:
        return ()

    async def prepare(self, workspace: BenchmarkWorkspace) -> PreparedBenchmark:
        return PreparedBenchmark(manifest=self.manifest, root=self.root)

    async def documents(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkDocument]:
        with (self.root / "corpus.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                text = f"{row.get('title', '')}\n{row['text']}".strip()
                yield BenchmarkDocument(document_id=row["_id"], name=f"{row['_id']}.txt", data=text)

    async def cases(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkCase]:
        qrels = read_qrels(self.root / "qrels" / f"{self.manifest.split}.tsv")
        with (self.root / "queries.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                judged = qrels.get(row["_id"])
                if not judged:
                    continue
                evidence = tuple(
                    BenchmarkEvidence(
                        reference_id=doc,
                        locator={"document_id": doc},
                        metadata={"relevance": grade},
                    )
                    for doc, grade in judged.items()
                )
                yield BenchmarkCase(
                    case_id=row["_id"],
                    query=row["text"],
                    expected=BenchmarkExpected(evidence=evidence),
                )

    async def run_units(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkRunUnit]:
        yield BenchmarkRunUnit(unit_id="corpus")

    def evaluators(self) -> tuple[NDCGAtK | RecallAtK, ...]:
        return (NDCGAtK(k=10), RecallAtK(k=100))
