"""RiversBenchmark: a complete benchmark adapter over files in a format of its own.

The data is a directory of Markdown documents (one per river) and `questions.csv` with the
columns `id, question, answer, source, evidence, topic`. The adapter turns them into the
protocol's records; it never builds a knowledge base, queries one or aggregates scores.
"""

from __future__ import annotations

import csv
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from heta_eval.benchmarks import BenchmarkDataError
from heta_eval.evaluators import AnswerContains, EvidenceMatcher, EvidenceRecallAtK
from heta_eval.protocols import BenchmarkAdapter, BenchmarkEvaluatorProtocol
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

BUNDLED_DATA = Path(__file__).resolve().parent / "data"
COLUMNS = ("id", "question", "answer", "source", "evidence", "topic")


class RiversBenchmark(BenchmarkAdapter):
    """Five Markdown documents about rivers and ten questions, one knowledge base for all.

    `data_dir` is a directory with `*.md` documents and `questions.csv` (default: the files
    shipped next to this module). Each question's evidence is the document it names *and*
    the sentence that answers it, so `evidence_recall@k` counts a hit only when a top-k
    chunk comes from that document and holds at least 80% of that sentence's words.
    """

    # Case metadata keys the report summarises by (optional protocol attribute).
    slice_by = ("topic",)
    # How deep results are retrieved when runner.top_k is null (optional; default 10).
    default_top_k = 10

    def __init__(self, data_dir: str | Path | None = None, evidence_ks: Sequence[int] = (1, 3)):
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else BUNDLED_DATA
        if not evidence_ks or any(int(k) <= 0 for k in evidence_ks):
            raise ValueError(f"evidence_ks must be positive integers, got {list(evidence_ks)}")
        self.evidence_ks = tuple(int(k) for k in evidence_ks)
        self._manifest = BenchmarkManifest(
            name="rivers",
            version="1",
            split="test",
            task_type="qa",
            build_scope="corpus",
            license="CC0-1.0",
        )

    @property
    def manifest(self) -> BenchmarkManifest:
        """Name, version and split: they key the object store, tags and caches."""
        return self._manifest

    def resources(self) -> tuple[BenchmarkResource, ...]:
        """Nothing to download. A remote benchmark lists its files here, each with a
        `sha256:` checksum, and fetches them in `prepare` (see heta_eval/benchmarks/beir.py)."""
        return ()

    async def prepare(self, workspace: BenchmarkWorkspace) -> PreparedBenchmark:
        """Locate and check the data; `workspace.root` is where a download would go."""
        questions = self.data_dir / "questions.csv"
        if not questions.is_file():
            raise BenchmarkDataError(f"benchmark.data_dir: {questions} not found")
        if not any(self.data_dir.glob("*.md")):
            raise BenchmarkDataError(f"benchmark.data_dir: no *.md documents in {self.data_dir}")
        return PreparedBenchmark(
            manifest=self.manifest,
            root=self.data_dir.resolve(),
            paths={"questions": questions.resolve()},
        )

    async def documents(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkDocument]:
        """One raw document per Markdown file; the runner writes it to the object store."""
        for path in sorted(prepared.root.glob("*.md")):
            yield BenchmarkDocument(
                document_id=path.stem,
                name=path.name,
                media_type="text/markdown",  # the recipe's parser splits it by section
                path=path,
            )

    async def cases(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkCase]:
        """One case per CSV row: the question, its answer, and where the answer is."""
        path = prepared.paths["questions"]
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
            if missing:
                raise BenchmarkDataError(f"{path}:1: missing columns {missing}")
            for row in reader:
                line = reader.line_num
                for column in COLUMNS:
                    if not (row[column] or "").strip():
                        raise BenchmarkDataError(f"{path}:{line}: {column}: must not be empty")
                document_id = Path(row["source"]).stem
                if not (prepared.root / row["source"]).is_file():
                    raise BenchmarkDataError(
                        f"{path}:{line}: source: no document {row['source']!r} in {prepared.root}"
                    )
                yield BenchmarkCase(
                    case_id=row["id"],
                    query=row["question"],
                    expected=BenchmarkExpected(
                        answers=(row["answer"],),
                        evidence=(
                            BenchmarkEvidence(
                                locator={"document_id": document_id}, text=row["evidence"]
                            ),
                        ),
                    ),
                    metadata={"topic": row["topic"]},
                )

    async def run_units(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkRunUnit]:
        """One unit: a knowledge base over every document, queried with every case.

        Empty `document_ids`/`case_ids` mean all of them. A benchmark with one knowledge base
        per report (UDA) yields one unit per report, naming its documents and cases.
        """
        yield BenchmarkRunUnit(unit_id="corpus")

    def evaluators(self) -> tuple[BenchmarkEvaluatorProtocol, ...]:
        """The benchmark's scoring policy: evidence recall at each k, and whether the top
        results hold the answer."""
        matcher = EvidenceMatcher("locator_and_text", min_text_overlap=0.8)
        return (
            *(EvidenceRecallAtK(k=k, matcher=matcher) for k in self.evidence_ks),
            AnswerContains(target="context", k=max(self.evidence_ks)),
        )
