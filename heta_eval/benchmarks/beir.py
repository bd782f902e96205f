"""BEIR: any dataset of the BEIR collection in its official file layout."""

from __future__ import annotations

import csv
import logging
from collections.abc import AsyncIterator, Iterator, Mapping
from functools import cached_property
from pathlib import Path

from heta_eval.benchmarks.archives import extract_archive
from heta_eval.benchmarks.download import (
    ChecksumMismatchError,
    fetch_resource,
    sha256_file,
)
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError, iter_jsonl
from heta_eval.evaluators import MAPAtK, MRRAtK, NDCGAtK, PrecisionAtK, RecallAtK
from heta_eval.json_cache import cache_dir
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

log = logging.getLogger(__name__)

BEIR_BASE_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets"
CITATION = (
    "Thakur, N., Reimers, N., Rücklé, A., Srivastava, A., Gurevych, I. BEIR: A Heterogeneous "
    "Benchmark for Zero-shot Evaluation of Information Retrieval Models. NeurIPS 2021 "
    "Datasets and Benchmarks."
)
# sha256 of the official members, for datasets whose sums we have checked against the
# published archive. BEIR publishes md5 sums of the zips only, so archives are verified by
# their members after extraction.
KNOWN_MEMBER_SHA256: dict[str, dict[str, str]] = {
    "scifact": {
        "corpus.jsonl": "dec31c8182f3d744c7d2c09423756fd1d17cbef75808db13ba01cc0aab4d1ac6",
        "queries.jsonl": "8ff84a7c903f722981cd8d595c022660140c51867b27608a6d4910db86080313",
        "qrels/test.tsv": "0864bb985e0ca2367ba217977e72004d549054b2b06666ed9d4825ac7c21284c",
        "qrels/train.tsv": "a53f2114831916c096b6c37d9e54da68cef4efdcdbd5ed46533601af972acf1d",
    },
}


# Splits a BEIR dataset publishes besides `test`, for datasets not on disk yet (from the BEIR
# paper's table); `dev` is preferred for tuning, else `train`.
TUNING_SPLITS = ("dev", "train")
KNOWN_TUNING_SPLITS = {
    "scifact": "train",
    "nfcorpus": "dev",
    "fiqa": "dev",
    "hotpotqa": "dev",
    "msmarco": "dev",
    "fever": "dev",
    "quora": "dev",
    "dbpedia-entity": "dev",
}


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """BEIR qrels: tab-separated `query-id, corpus-id, score` with a header (CRLF allowed)."""
    qrels: dict[str, dict[str, int]] = {}
    try:
        handle = path.open(encoding="utf-8-sig", newline="")
    except FileNotFoundError:
        raise BenchmarkDataError(f"{path}: file not found") from None
    with handle:
        for lineno, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if not row or (lineno == 1 and row[0].strip().lower() in ("query-id", "query_id")):
                continue
            if len(row) != 3:
                raise BenchmarkDataError(
                    f"{path}:{lineno}: expected 3 tab-separated fields "
                    f"(query-id, corpus-id, score), got {len(row)}"
                )
            query_id, doc_id, score = (field.strip() for field in row)
            try:
                grade = int(float(score))
            except ValueError:
                raise BenchmarkDataError(
                    f"{path}:{lineno}: score must be an integer, got {score!r}"
                ) from None
            qrels.setdefault(query_id, {})[doc_id] = grade
    return qrels


def _require(row: dict, field: str, path: Path, lineno: int) -> str:
    value = row.get(field)
    if not isinstance(value, str) or not value:
        raise BenchmarkDataError(f"{path}:{lineno}: {field}: expected a non-empty string")
    return value


class BeirBenchmark(BenchmarkAdapter):
    """A BEIR dataset (`corpus.jsonl`, `queries.jsonl`, `qrels/{split}.tsv`) as one corpus KB.

    Conventions, chosen so numbers compare with the BEIR paper, Pyserini and bm25s:
    - Documents keep BEIR's `_id`; the indexed text is the title, a newline, then the text.
    - Cases are the queries judged in `qrels/{split}.tsv`; unjudged queries are left out,
      as BEIR evaluates only judged queries.
    - Graded qrels become evidence with `metadata["relevance"]`; grades <= 0 are kept as
      "judged not relevant" (the metrics treat them as trec_eval does). Qrels naming unknown
      documents or queries are counted and reported in one warning, not dropped silently.
    - Metrics are computed at document level: chunk hits map back to their document and
      only its first (best) occurrence counts; nDCG uses trec_eval's gain (the grade).
    - A retrieved document whose id equals the query id is ignored (BEIR's
      `ignore_identical_ids=True`, which matters for ArguAna and Quora): the runner
      retrieves `top_k + 1`, drops it and keeps `top_k`, as BEIR's own search does, so the
      convention holds under any evaluator set (`evaluator=retrieval` too).
    - Default evaluators: nDCG@10, Recall@100, MAP@100, MRR@10, Precision@10; the runner
      retrieves `default_top_k = 100` results unless `runner.top_k` says otherwise.

    `data_root` points at a directory holding the dataset files (no network is used);
    without it the official zip (or the one at `base_url`, for a mirror) is downloaded
    into the cache, extracted, and its members verified where their sha256 is known.
    """

    default_top_k = 100

    def __init__(
        self,
        dataset: str = "scifact",
        split: str = "test",
        data_root: str | Path | None = None,
        cache_dir: str | Path | None = None,
        ignore_identical_ids: bool = True,
        base_url: str = BEIR_BASE_URL,
    ) -> None:
        if not dataset or ".." in dataset or dataset.startswith("/"):
            raise ValueError(
                f"dataset must be a BEIR dataset name such as 'scifact', got {dataset!r}"
            )
        self.dataset = dataset
        self.data_root = Path(data_root).expanduser() if data_root is not None else None
        self.cache_dir = cache_dir
        self.ignore_identical_ids = ignore_identical_ids
        self.base_url = base_url.rstrip("/")
        self._manifest = BenchmarkManifest(
            name=f"beir-{dataset.replace('/', '-')}",
            version="1.0",
            split=split,
            task_type="retrieval",
            build_scope="corpus",
            homepage="https://github.com/beir-cellar/beir",
            license="see the dataset's own license (BEIR redistributes each under its terms)",
            citation=CITATION,
            metadata={"dataset": dataset},
        )
        self._root: Path | None = None

    @property
    def manifest(self) -> BenchmarkManifest:
        return self._manifest

    def resources(self) -> tuple[BenchmarkResource, ...]:
        return (
            BenchmarkResource(
                name=f"{self.dataset.replace('/', '-')}.zip",
                uri=f"{self.base_url}/{self.dataset}.zip",
                description=(
                    f"BEIR {self.dataset} (corpus, queries, qrels); members verified by sha256"
                    if self.dataset in KNOWN_MEMBER_SHA256
                    else f"BEIR {self.dataset} (corpus, queries, qrels)"
                ),
            ),
        )

    def _local_root(self) -> Path | None:
        """The dataset's directory when it is on disk (`data_root`, or an earlier download)."""
        if self.data_root is not None:
            return self.data_root

        extracted = cache_dir(self.cache_dir) / "beir" / self.dataset.replace("/", "-")
        nested = extracted / Path(self.dataset).name
        root = nested if nested.is_dir() else extracted
        return root if (root / "qrels").is_dir() else None

    def tuning_split(self) -> str | None:
        """The split to tune on: `dev`, else `train`, when the dataset has its qrels (and it
        is not the split evaluated); None when it has only the evaluated split."""
        candidates = [s for s in TUNING_SPLITS if s != self.manifest.split]
        root = self._local_root()
        if root is None:
            known = KNOWN_TUNING_SPLITS.get(self.dataset)
            return known if known in candidates else None
        return next((s for s in candidates if (root / "qrels" / f"{s}.tsv").is_file()), None)

    def with_split(self, split: str, metadata: Mapping[str, str] | None = None) -> BeirBenchmark:
        """The same dataset evaluated on `qrels/{split}.tsv` (with extra manifest metadata)."""
        other = BeirBenchmark(
            dataset=self.dataset,
            split=split,
            data_root=self.data_root,
            cache_dir=self.cache_dir,
            ignore_identical_ids=self.ignore_identical_ids,
            base_url=self.base_url,
        )
        if metadata:
            merged = {**other._manifest.metadata, **metadata}
            other._manifest = other._manifest.model_copy(update={"metadata": merged})
        return other

    def _verify_members(self, root: Path) -> None:

        for member, expected in KNOWN_MEMBER_SHA256.get(self.dataset, {}).items():
            path = root / member
            if not path.is_file():
                continue
            actual = sha256_file(path)
            if actual != expected:
                raise ChecksumMismatchError(
                    f"{path}: expected sha256 {expected}, got {actual} "
                    f"(not the official BEIR {self.dataset} file)"
                )

    def _unpack(self, archive: Path, target: Path, *, fresh: bool) -> Path:
        """Extract `archive` into `target` (nothing to do when it already holds it). A
        `fresh` download is checked too (the BEIR layout, the members whose sha256 is
        known); when it fails that, no `target` is left."""
        import shutil

        extracted = extract_archive(archive, target)
        nested = extracted / Path(self.dataset).name
        root = nested if nested.is_dir() else extracted
        if fresh:
            try:
                self._check_layout(root)
                self._verify_members(root)
            except BaseException:
                shutil.rmtree(extracted, ignore_errors=True)
                raise
        return root

    def _check_layout(self, root: Path) -> None:
        for member in ("corpus.jsonl", "queries.jsonl", f"qrels/{self.manifest.split}.tsv"):
            if not (root / member).is_file():
                where = "benchmark.data_root" if self.data_root is not None else "the download"
                raise BenchmarkDataError(
                    f"{where}: {root / member} not found (BEIR layout: corpus.jsonl, "
                    f"queries.jsonl, qrels/{{split}}.tsv)"
                )

    async def prepare(self, workspace: BenchmarkWorkspace) -> PreparedBenchmark:
        if self.data_root is not None:
            root = self.data_root
        else:
            base = cache_dir(self.cache_dir) / "beir"
            target = base / self.dataset.replace("/", "-")
            (resource,) = self.resources()
            # The archive is extracted (and its members verified) before it is kept under
            # its name: an archive that cannot be is never reused.
            archive = fetch_resource(
                resource,
                base,
                offline=workspace.offline,
                check=lambda downloaded: self._unpack(downloaded, target, fresh=True),
            )
            root = self._unpack(archive, target, fresh=False)
        self._check_layout(root)
        self._verify_members(root)
        self._root = root
        return PreparedBenchmark(
            manifest=self.manifest,
            root=root.resolve(),
            paths={
                "corpus": root / "corpus.jsonl",
                "queries": root / "queries.jsonl",
                "qrels": root / "qrels" / f"{self.manifest.split}.tsv",
            },
        )

    def _corpus(self, prepared: PreparedBenchmark) -> Iterator[tuple[str, str, str]]:
        path = prepared.paths["corpus"]
        for lineno, row in iter_jsonl(path):
            doc_id = _require(row, "_id", path, lineno)
            text = row.get("text")
            if not isinstance(text, str):
                raise BenchmarkDataError(f"{path}:{lineno}: text: expected a string")
            title = row.get("title") or ""
            yield doc_id, str(title), text

    @cached_property
    def _doc_ids(self) -> frozenset[str]:
        assert self._root is not None, "prepare() first"
        path = self._root / "corpus.jsonl"
        return frozenset(_require(row, "_id", path, n) for n, row in iter_jsonl(path))

    async def documents(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkDocument]:
        ids: set[str] = set()
        for doc_id, title, text in self._corpus(prepared):
            ids.add(doc_id)
            yield BenchmarkDocument(
                document_id=doc_id,
                name=f"{doc_id}.txt",
                data=f"{title}\n{text}".strip(),
                metadata={"title": title} if title else {},
            )
        if self._root is not None and prepared.paths["corpus"] == self._root / "corpus.jsonl":
            # The whole corpus was read: `cases` need not read it again for its ids.
            self.__dict__.setdefault("_doc_ids", frozenset(ids))

    async def cases(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkCase]:
        qrels = read_qrels(prepared.paths["qrels"])
        path = prepared.paths["queries"]
        seen: set[str] = set()
        unknown_docs = 0
        for lineno, row in iter_jsonl(path):
            query_id = _require(row, "_id", path, lineno)
            judged = qrels.get(query_id)
            if not judged:
                continue
            seen.add(query_id)
            evidence = []
            for doc_id, grade in judged.items():
                if doc_id not in self._doc_ids:
                    unknown_docs += 1
                evidence.append(
                    BenchmarkEvidence(
                        reference_id=doc_id,
                        locator={"document_id": doc_id},
                        metadata={"relevance": grade},
                    )
                )
            yield BenchmarkCase(
                case_id=query_id,
                query=_require(row, "text", path, lineno),
                expected=BenchmarkExpected(evidence=tuple(evidence)),
            )
        unknown_queries = len(set(qrels) - seen)
        if unknown_queries or unknown_docs:
            log.warning(
                "%s: %d qrels queries are not in queries.jsonl and %d judgments name "
                "documents not in corpus.jsonl; they cannot be retrieved",
                self.manifest.key,
                unknown_queries,
                unknown_docs,
            )

    async def run_units(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkRunUnit]:
        yield BenchmarkRunUnit(unit_id="corpus")

    def evaluators(self) -> tuple[BenchmarkEvaluatorProtocol, ...]:
        ignore = self.ignore_identical_ids
        return (
            NDCGAtK(k=10, ignore_identical_ids=ignore),
            RecallAtK(k=100, ignore_identical_ids=ignore),
            MAPAtK(k=100, ignore_identical_ids=ignore),
            MRRAtK(k=10, ignore_identical_ids=ignore),
            PrecisionAtK(k=10, ignore_identical_ids=ignore),
        )
