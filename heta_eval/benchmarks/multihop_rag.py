"""MultiHopRagBenchmark: MultiHop-RAG (Tang & Yang, COLM 2024), multi-hop queries over news."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from heta_eval.benchmarks.download import cache_dir, fetch_resource
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError
from heta_eval.evaluators import AllEvidenceAtK, AnswerContains, EvidenceMatcher, EvidenceRecallAtK
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
from heta_eval.records._base import NonEmptyStr

log = logging.getLogger(__name__)

CORPUS_UNIT_ID = "corpus"
CORPUS_FILE = "corpus.json"
QUERIES_FILE = "MultiHopRAG.json"
HOMEPAGE = "https://github.com/yixuantt/MultiHop-RAG"
_RAW = "https://raw.githubusercontent.com/yixuantt/MultiHop-RAG/main/dataset"
CITATION = (
    "Yixuan Tang and Yi Yang. MultiHop-RAG: Benchmarking Retrieval-Augmented Generation "
    "for Multi-Hop Queries. In Conference on Language Modeling (COLM), 2024. arXiv:2401.15391."
)
QUESTION_TYPES = ("inference_query", "comparison_query", "temporal_query", "null_query")
"""The question types the authors document (`question_type` is passed through as given)."""


class _Raw(BaseModel):
    # Extra keys in the published files are ignored, so a field added upstream breaks nothing.
    model_config = ConfigDict(extra="ignore", frozen=True)


M = TypeVar("M", bound=_Raw)


class _Article(_Raw):
    title: NonEmptyStr
    body: str
    url: str | None = None
    author: str | None = None
    source: str | None = None
    category: str | None = None
    published_at: str | None = None


class _EvidenceItem(_Raw):
    fact: NonEmptyStr
    title: str | None = None
    url: str | None = None
    author: str | None = None
    source: str | None = None
    category: str | None = None
    published_at: str | None = None


class _Query(_Raw):
    query: NonEmptyStr
    answer: str
    question_type: str | None = None
    evidence_list: list[_EvidenceItem]


def article_document_id(url: str | None, title: str) -> str:
    """Stable bare id of an article: `mh-` + 16 hex chars of sha256(url), else of the title."""
    key = url if url else title
    return "mh-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def read_json_array(path: Path) -> list[Any]:
    """The top-level JSON array of `path`; errors name the file (and line and column)."""
    try:
        with path.open("r", encoding="utf-8-sig") as handle:
            value = json.load(handle)
    except FileNotFoundError:
        raise BenchmarkDataError(f"{path}: file not found") from None
    except json.JSONDecodeError as exc:
        raise BenchmarkDataError(
            f"{path}:{exc.lineno}: invalid JSON at column {exc.colno}: {exc.msg}"
        ) from None
    except UnicodeDecodeError as exc:
        raise BenchmarkDataError(
            f"{path}: not valid UTF-8 at byte {exc.start} ({exc.reason}); "
            "re-encode the file as UTF-8"
        ) from None
    if not isinstance(value, list):
        raise BenchmarkDataError(
            f"{path}: expected a JSON array at the top level, got {type(value).__name__}"
        )
    return value


def _location(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def _validate_item(model: type[M], value: Any, path: Path, index: int) -> M:
    """Validate array element `index`; errors read `file[index].field[i].sub: problem`."""
    where = f"{path}[{index}]"
    if not isinstance(value, dict):
        raise BenchmarkDataError(f"{where}: expected a JSON object, got {type(value).__name__}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        parts = []
        for item in exc.errors():
            got = item.get("input")
            shown = (
                "" if isinstance(got, dict) or item["type"] == "missing" else f" (got {got!r:.80})"
            )
            parts.append(f"{where}{_location(tuple(item['loc']))}: {item['msg']}{shown}")
        raise BenchmarkDataError("\n".join(parts)) from None


@dataclass(frozen=True)
class _Loaded:
    documents: tuple[BenchmarkDocument, ...]
    cases: tuple[BenchmarkCase, ...]
    unmatched_evidence: int


class MultiHopRagBenchmark(BenchmarkAdapter):
    """MultiHop-RAG: 2,556 multi-hop queries over a corpus of 609 English news articles.

    Source: Yixuan Tang and Yi Yang, "MultiHop-RAG: Benchmarking Retrieval-Augmented
    Generation for Multi-Hop Queries", COLM 2024 (arXiv:2401.15391); data and code at
    https://github.com/yixuantt/MultiHop-RAG, files `dataset/corpus.json` (a JSON array of
    articles: title, author, source, published_at, category, url, body) and
    `dataset/MultiHopRAG.json` (a JSON array of queries: query, answer, question_type,
    evidence_list of {title, author, url, source, category, published_at, fact}). Question
    types: inference_query, comparison_query, temporal_query and null_query (no answer in
    the corpus; its answer is "Insufficient information." and, as far as we know, its
    evidence list is empty). The articles were published between 26 September and
    26 December 2023 and each query's evidence spans 2 to 4 articles (per the paper).

    License: the repository README states ODC-BY 1.0 for MultiHop-RAG; an MIT licence for
    the code is reported but not confirmed here. Counts above are the paper's and README's,
    not checked against a download. No checksums are published; resources carry none.

    Mapping: one document per article, id `mh-` + the first 16 hex chars of sha256(url)
    (of the title when an article has no url), text = title + "\\n" + body so titles are
    indexed; url, title, source, category, published_at and author go to the metadata.
    One case per query, id `mhrag-{index:04d}` (its position in MultiHopRAG.json), answer
    kept as given (also "Insufficient information." for null queries), one evidence item
    per evidence_list entry, located at the article whose url (else title) it names, with
    the fact as its text. Entries naming no article of the corpus keep only their text and
    are counted in one warning; under the locator_and_text matcher they can never be found,
    so they count as missed. `question_type` goes to the case metadata and the report is
    sliced by it (`slice_by`). One knowledge base serves every case (build_scope corpus).

    Scoring: `evidence_recall@k` for each k in `top_k_evidence` with
    `EvidenceMatcher("locator_and_text", min_text_overlap=evidence_min_text_overlap)`: a
    retrieved chunk supports an evidence item when it comes from the right article *and*
    contains (most of) the fact's word tokens. The locator alone would credit any chunk of a
    long article; the text alone would credit the same sentence quoted by another outlet;
    the token-overlap threshold (instead of exact containment) keeps a fact that a chunk
    boundary cuts short, or that differs in spacing and punctuation, countable. Set
    `evidence_min_text_overlap=None` to require the whole fact verbatim (whitespace- and
    case-normalised), which is close to the authors' own check. Plus
    `context_has_answer@{max k}` and `answer_contains` (skipped when the recipe generates no
    answer). Caveats: many answers are "Yes"/"No" or "Insufficient information.", which
    context_has_answer cannot meaningfully find in retrieved text, so read it per slice.

    Difference from the official scripts (retrieval_evaluate.py, qa_evaluate.py): those
    report Hits@4/@10, MAP@10 and MRR@10, where a chunk is a hit when a gold fact with all
    spaces removed is a substring of it (no article check), skip null queries, and judge
    answers by any shared word; here evidence recall is the fraction of a query's facts
    found, and null queries are skipped by evidence recall only because they carry no
    evidence. Numbers are therefore not directly comparable with the paper's tables.

    `data_root`: a directory holding corpus.json and MultiHopRAG.json; when None both are
    downloaded from GitHub into the heta-eval cache (`<cache>/multihop_rag`).
    """

    slice_by: tuple[str, ...] = ("question_type",)

    def __init__(
        self,
        data_root: str | Path | None = None,
        top_k_evidence: Sequence[int] = (2, 4, 10),
        evidence_min_text_overlap: float | None = 0.8,
        split: str = "all",
    ) -> None:
        if split != "all":
            raise ValueError(f"split must be 'all' (MultiHop-RAG has one split), got {split!r}")
        ks = tuple(int(k) for k in top_k_evidence)
        if not ks:
            raise ValueError("top_k_evidence must name at least one k")
        if any(k <= 0 for k in ks):
            raise ValueError(f"top_k_evidence must be positive integers, got {list(ks)}")
        if len(set(ks)) != len(ks):
            raise ValueError(f"top_k_evidence lists a k twice: {list(ks)}")
        self.data_root = Path(data_root).expanduser() if data_root is not None else None
        self.top_k_evidence = ks
        self.evidence_min_text_overlap = evidence_min_text_overlap
        # Built now so that a bad threshold fails when the benchmark is configured.
        self.matcher = EvidenceMatcher(
            "locator_and_text", min_text_overlap=evidence_min_text_overlap
        )
        self._manifest = BenchmarkManifest(
            name="multihop_rag",
            version="official",
            split=split,
            task_type="multi_hop_qa",
            build_scope="corpus",
            homepage=HOMEPAGE,
            license="ODC-BY-1.0 (data, per the authors' README); code reportedly MIT",
            citation=CITATION,
        )
        self._loaded: dict[tuple[Path, Path], _Loaded] = {}

    @property
    def manifest(self) -> BenchmarkManifest:
        return self._manifest

    def resources(self) -> tuple[BenchmarkResource, ...]:
        # The authors publish no checksums and the files live on a branch that may change,
        # so none are declared.
        return (
            BenchmarkResource(
                name=CORPUS_FILE,
                uri=f"{_RAW}/{CORPUS_FILE}",
                checksum=None,
                description="609 news articles (JSON array)",
            ),
            BenchmarkResource(
                name=QUERIES_FILE,
                uri=f"{_RAW}/{QUERIES_FILE}",
                checksum=None,
                description="2,556 queries with answers and evidence (JSON array)",
            ),
        )

    async def prepare(self, workspace: BenchmarkWorkspace) -> PreparedBenchmark:
        resources = self.resources()
        if self.data_root is not None:
            if not self.data_root.is_dir():
                raise BenchmarkDataError(
                    f"benchmark.data_root: not a directory: {self.data_root} (it must hold "
                    f"{CORPUS_FILE} and {QUERIES_FILE} from {HOMEPAGE}, folder dataset/; "
                    "or set benchmark.data_root=null to download them)"
                )
            files = {r.name: self.data_root / r.name for r in resources}
            for name, path in files.items():
                if not path.is_file():
                    raise BenchmarkDataError(
                        f"benchmark.data_root: {name} not found in {self.data_root} (expected "
                        f"{path}; get it from {HOMEPAGE}, folder dataset/, or set "
                        "benchmark.data_root=null to download it)"
                    )
            root = self.data_root.resolve()
        else:
            # Imported here so that reading local files never needs the download machinery.

            root = cache_dir() / "multihop_rag"
            files = {r.name: fetch_resource(r, root, offline=workspace.offline) for r in resources}
        return PreparedBenchmark(
            manifest=self.manifest,
            root=root,
            paths={
                "corpus": files[CORPUS_FILE].resolve(),
                "queries": files[QUERIES_FILE].resolve(),
            },
        )

    def _load(self, prepared: PreparedBenchmark) -> _Loaded:
        corpus_path, queries_path = prepared.paths["corpus"], prepared.paths["queries"]
        key = (corpus_path, queries_path)
        if key not in self._loaded:
            self._loaded[key] = self._read(corpus_path, queries_path)
        return self._loaded[key]

    def _read(self, corpus_path: Path, queries_path: Path) -> _Loaded:
        documents: list[BenchmarkDocument] = []
        by_key: dict[str, int] = {}
        by_url: dict[str, str] = {}
        by_title: dict[str, str] = {}
        duplicates: list[str] = []
        for index, raw in enumerate(read_json_array(corpus_path)):
            article = _validate_item(_Article, raw, corpus_path, index)
            url = article.url or None
            key = url or article.title
            if key in by_key:
                # Real corpora repeat articles now and then; evaluate each text once.
                duplicates.append(f"{corpus_path.name}[{index}] repeats [{by_key[key]}]")
                continue
            by_key[key] = index
            document_id = article_document_id(url, article.title)
            if url:
                by_url[url] = document_id
            by_title.setdefault(article.title, document_id)
            documents.append(
                BenchmarkDocument(
                    document_id=document_id,
                    name=f"{document_id}.txt",
                    media_type="text/plain",
                    data=f"{article.title}\n{article.body}".encode(),
                    metadata={
                        "url": url,
                        "title": article.title,
                        "source": article.source,
                        "category": article.category,
                        "published_at": article.published_at,
                        "author": article.author,
                    },
                )
            )
        if not documents:
            raise BenchmarkDataError(f"{corpus_path}: the corpus holds no articles")
        if duplicates:
            log.warning(
                "%s: %d articles repeat an earlier url (or title without url) and are left out: %s",
                corpus_path,
                len(duplicates),
                "; ".join(duplicates[:5]),
            )

        cases: list[BenchmarkCase] = []
        unmatched = 0
        for index, raw in enumerate(read_json_array(queries_path)):
            query = _validate_item(_Query, raw, queries_path, index)
            evidence = []
            for item in query.evidence_list:
                document_id = (by_url.get(item.url) if item.url else None) or (
                    by_title.get(item.title) if item.title else None
                )
                metadata = {"title": item.title, "source": item.source, "url": item.url}
                if document_id is None:
                    unmatched += 1
                    evidence.append(BenchmarkEvidence(text=item.fact, metadata=metadata))
                else:
                    evidence.append(
                        BenchmarkEvidence(
                            reference_id=document_id,
                            locator={"document_id": document_id},
                            text=item.fact,
                            metadata=metadata,
                        )
                    )
            cases.append(
                BenchmarkCase(
                    case_id=f"mhrag-{index:04d}",
                    query=query.query,
                    expected=BenchmarkExpected(
                        answers=(query.answer,) if query.answer.strip() else (),
                        evidence=tuple(evidence),
                    ),
                    metadata={"question_type": query.question_type},
                )
            )
        if not cases:
            raise BenchmarkDataError(f"{queries_path}: the file holds no queries")
        if unmatched:
            log.warning(
                "multihop_rag: %d evidence item(s) in %s name an article (url or title) not "
                "in %s; they are kept with their fact text only and count as missed by "
                "evidence recall",
                unmatched,
                queries_path,
                corpus_path,
            )
        return _Loaded(tuple(documents), tuple(cases), unmatched)

    async def documents(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkDocument]:
        for document in self._load(prepared).documents:
            yield document

    async def cases(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkCase]:
        for case in self._load(prepared).cases:
            yield case

    async def run_units(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkRunUnit]:
        yield BenchmarkRunUnit(unit_id=CORPUS_UNIT_ID)

    def evaluators(self) -> tuple[BenchmarkEvaluatorProtocol, ...]:
        return (
            *(EvidenceRecallAtK(k, matcher=self.matcher) for k in self.top_k_evidence),
            AllEvidenceAtK(k=max(self.top_k_evidence), matcher=self.matcher),
            AnswerContains(target="context", k=max(self.top_k_evidence)),
            AnswerContains(target="answer"),
        )
