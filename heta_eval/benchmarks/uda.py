"""UDA-Benchmark: document QA where each question is bound to one source document."""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import AsyncIterator
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from heta_eval.benchmarks.jsonl_files import BenchmarkDataError
from heta_eval.evaluators import (
    AnswerContains,
    AnswerNumericMatch,
    EvidenceMatcher,
    EvidenceRecallAtK,
)
from heta_eval.kb.parsers.base import SEGMENTS_MEDIA_TYPE
from heta_eval.protocol import BenchmarkAdapter, BenchmarkEvaluatorProtocol
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

REPO_URL = "https://raw.githubusercontent.com/qinchuanhui/UDA-Benchmark/main/dataset"
CITATION = (
    "Hui, Y., Lu, Y., Zhang, H. UDA: A Benchmark Suite for Retrieval Augmented Generation in "
    "Real-world Document Analysis. NeurIPS 2024 Datasets and Benchmarks."
)
SUBSETS = ("fin", "tat", "paper_tab", "paper_text", "feta", "nq")
# sha256 of the published files that we have checked (finance subset).
KNOWN_SHA256 = {
    "qa/fin_qa.csv": "dea42d3f77f2e61bf28f93938809f28e30baacbdc5c4c220c20d61889b49d992",
    "extended_qa_info_bench/bench_fin_qa.json": (
        "8e023630eed489239f0538038beccbf4069505c39cd8c5bf72f98d23066d17f2"
    ),
}
MEDIA_TYPES = {
    ".pdf": "application/pdf",
    ".html": "text/html",
    ".htm": "text/html",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".json": "application/json",
}
_PAGE = re.compile(r"page_(\d+)")
Source = Literal["bench", "qa_table", "mixed"]


def page_number(q_uid: str) -> int | None:
    """1-based page named in a question id such as `ADI/2009/page_49.pdf-1`, or None."""
    match = _PAGE.search(q_uid)
    return int(match.group(1)) if match else None


def _answers(*values: Any) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for value in values:
        text = "" if value is None else str(value).strip()
        if text:
            seen.setdefault(text, None)
    return tuple(seen)


def render_row(header: list[str], row: list[str]) -> str:
    """A table row as text that keeps its column headers: `label: col = value; ...`."""
    if not header or len(header) != len(row) or not row:
        return " | ".join(row)
    cells = [f"{h} = {v}" for h, v in zip(header[1:], row[1:], strict=True) if str(v).strip()]
    return f"{row[0]}: " + "; ".join(cells)


class UdaBenchmark(BenchmarkAdapter):
    """UDA-Benchmark (finance and the other subsets), one knowledge base per source document.

    Questions are bound to one report each, so every report is its own run unit (its
    documents, its cases), and the report aggregates all units. Two inputs:

    - `source="bench"`: the sampled benchmark `extended_qa_info_bench/bench_{subset}_qa.json`
      (finance: 451 questions, 99 reports). Each question carries its page (`pre_text`,
      `table`, `post_text`); a document is one page (`{report}-page_{N}`), pre-segmented:
      the text blocks and each table row (rendered with its column headers, with
      `table_id`/`row_index` in provenance). Pages are deduplicated per report.
    - `source="mixed"`: reports whose source PDF is in `documents_dir` are evaluated from
      the PDF with the QA table's questions, every other report of the sampled bench from
      its page text; the report slices evidence recall by `source_type` (pdf, page_text).
    - `source="qa_table"`: the QA table `qa/{subset}_qa.csv` (pipe-delimited) with the
      source documents from `documents_dir` (PDFs for finance, parsed page by page). Reports
      whose file is missing are skipped with one warning counting reports and questions.

    Pages: `page_N` in a question id is the 1-based PDF page; locators use 0-based
    `page_index` (`page_59` → `page_index=58`, the 59th page). Evidence is that page:
    `{"document_id", "page_index"}`. Expected answers are every form the data gives
    (`57%` and `0.57484`). Default evaluators: evidence recall@1/@5/@10 (the retrieved chunk
    must come from that document and page), numeric answer match (percent-aware, with
    tolerance; exact match for text answers) and answer containment — the last two are
    skipped when the recipe generates no answer.
    """

    default_top_k = 10

    def __init__(
        self,
        subset: str = "fin",
        source: Source = "bench",
        data_root: str | Path | None = None,
        documents_dir: str | Path | None = None,
        evidence_ks: tuple[int, ...] | list[int] = (1, 5, 10),
        numeric_rel_tol: float = 1e-2,
    ) -> None:
        if subset not in SUBSETS:
            raise ValueError(f"subset must be one of {list(SUBSETS)}, got {subset!r}")
        if source not in ("bench", "qa_table", "mixed"):
            raise ValueError(f"source must be 'bench', 'qa_table' or 'mixed', got {source!r}")
        self.subset = subset
        self.source = source
        self.data_root = Path(data_root).expanduser() if data_root is not None else None
        self.documents_dir = Path(documents_dir).expanduser() if documents_dir else None
        self.evidence_ks = tuple(evidence_ks)
        self.numeric_rel_tol = numeric_rel_tol
        self._manifest = BenchmarkManifest(
            name=f"uda-{subset}",
            version="neurips2024",
            split={"bench": "bench", "qa_table": "all", "mixed": "mixed"}[source],
            task_type="document_qa",
            build_scope="case",
            homepage="https://github.com/qinchuanhui/UDA-Benchmark",
            license="CC BY-SA 4.0",
            citation=CITATION,
            metadata={"subset": subset, "source": source},
        )
        self._prepared: PreparedBenchmark | None = None
        # The mixed source reports evidence recall per source type (PDF versus page text).
        self.slice_by: tuple[str, ...] = ("source_type",) if source == "mixed" else ()

    @property
    def manifest(self) -> BenchmarkManifest:
        return self._manifest

    def _member(self) -> str:
        if self.source in ("bench", "mixed"):
            return f"extended_qa_info_bench/bench_{self.subset}_qa.json"
        return f"qa/{self.subset}_qa.csv"

    def resources(self) -> tuple[BenchmarkResource, ...]:
        member = self._member()
        digest = KNOWN_SHA256.get(member)
        return (
            BenchmarkResource(
                name=Path(member).name,
                uri=f"{REPO_URL}/{member}",
                checksum=f"sha256:{digest}" if digest else None,
                description=f"UDA {self.subset} questions ({self.source})",
            ),
        )

    async def prepare(self, workspace: BenchmarkWorkspace) -> PreparedBenchmark:
        member = self._member()
        if self.data_root is not None:
            path = self.data_root / member
            if not path.is_file():
                raise BenchmarkDataError(
                    f"benchmark.data_root: {path} not found (UDA layout: {member})"
                )
        else:
            from heta_eval.benchmarks.download import cache_dir, fetch_resource

            (resource,) = self.resources()
            path = fetch_resource(
                resource, cache_dir() / "uda" / Path(member).parent, offline=workspace.offline
            )
        paths = {"questions": path.resolve()}
        if self.source in ("qa_table", "mixed"):
            paths["documents"] = self._documents_dir().resolve()
        if self.source == "mixed":
            table = (self.data_root or Path()) / f"qa/{self.subset}_qa.csv"
            if not table.is_file():
                raise BenchmarkDataError(f"benchmark.data_root: {table} not found (mixed source)")
            paths["table"] = table.resolve()
        self._prepared = PreparedBenchmark(
            manifest=self.manifest, root=path.parent.resolve(), paths=paths
        )
        return self._prepared

    def _documents_dir(self) -> Path:
        if self.documents_dir is not None:
            candidates = [self.documents_dir]
        elif self.data_root is not None:
            candidates = [
                self.data_root / "src_doc_files" / f"{self.subset}_docs",
                self.data_root / "src_doc_files_example" / f"{self.subset}_docs",
            ]
        else:
            candidates = []
        for candidate in candidates:
            if candidate.is_dir():
                return candidate
        raise BenchmarkDataError(
            "benchmark.documents_dir: the qa_table source needs the UDA source documents "
            f"(looked in {[str(c) for c in candidates] or 'nothing: set benchmark.data_root'}); "
            "download them from the UDA-Benchmark release and point documents_dir at them"
        )

    @cached_property
    def _loaded(self) -> tuple[list[BenchmarkDocument], list[tuple[str, BenchmarkCase]]]:
        assert self._prepared is not None, "prepare() first"
        paths = self._prepared.paths
        if self.source == "bench":
            return self._load_bench(paths["questions"])
        if self.source == "qa_table":
            return self._load_table(paths["questions"], paths["documents"])
        # Mixed: reports whose PDF is here are evaluated from the PDF with the QA table's
        # questions; every other report of the sampled bench from its page text.
        pdf_documents, pdf_cases = self._load_table(paths["table"], paths["documents"], quiet=True)
        with_pdf = {d.document_id for d in pdf_documents}
        page_documents, page_cases = self._load_bench(paths["questions"])
        return (
            pdf_documents + [d for d in page_documents if d.metadata["report"] not in with_pdf],
            pdf_cases + [(r, c) for r, c in page_cases if r not in with_pdf],
        )

    def _load_bench(
        self, path: Path
    ) -> tuple[list[BenchmarkDocument], list[tuple[str, BenchmarkCase]]]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise BenchmarkDataError(
                f"{path}:{exc.lineno}: invalid JSON at column {exc.colno}: {exc.msg}"
            ) from None
        if not isinstance(data, dict):
            raise BenchmarkDataError(f"{path}: expected an object keyed by report name")
        documents: dict[str, BenchmarkDocument] = {}
        cases: list[tuple[str, BenchmarkCase]] = []
        for report, questions in data.items():
            for i, item in enumerate(questions):
                where = f"{path}[{report!r}][{i}]"
                try:
                    q_uid, question = item["q_uid"], item["question"]
                    answers, context = item["answers"], item["context"]
                    blocks = (context["pre_text"], context["table"], context["post_text"])
                except (KeyError, TypeError) as exc:
                    raise BenchmarkDataError(f"{where}: missing field {exc}") from None
                page = page_number(q_uid)
                if page is None:
                    raise BenchmarkDataError(f"{where}.q_uid: no page_N in {q_uid!r}")
                doc_id = f"{report}-page_{page}"
                if doc_id not in documents:
                    documents[doc_id] = self._page_document(doc_id, report, page, *blocks)
                evidence = BenchmarkEvidence(
                    reference_id=doc_id,
                    locator={"document_id": doc_id, "page_index": page - 1},
                    metadata={"facts": item.get("evidence") or {}},
                )
                cases.append(
                    (
                        report,
                        BenchmarkCase(
                            case_id=q_uid,
                            query=question,
                            expected=BenchmarkExpected(
                                answers=_answers(
                                    answers.get("str_answer"), answers.get("exe_answer")
                                ),
                                evidence=(evidence,),
                            ),
                            metadata={
                                "report": report,
                                "program": item.get("program"),
                                "source_type": "page_text",
                            },
                        ),
                    )
                )
        return list(documents.values()), cases

    @staticmethod
    def _page_document(
        doc_id: str, report: str, page: int, pre: list[str], table: list[list[str]], post: list[str]
    ) -> BenchmarkDocument:
        locator = {"page_index": page - 1}
        segments = []
        if pre:
            segments.append({"text": "\n".join(pre), "locator": {**locator, "block": "pre_text"}})
        header = [str(c) for c in table[0]] if table else []
        for row_index, row in enumerate(table):
            segments.append(
                {
                    "text": render_row(header, [str(c) for c in row]),
                    "locator": {**locator, "table_id": "table", "row_index": row_index},
                }
            )
        if post:
            segments.append({"text": "\n".join(post), "locator": {**locator, "block": "post_text"}})
        return BenchmarkDocument(
            document_id=doc_id,
            name=f"{doc_id}.segments.json",
            media_type=SEGMENTS_MEDIA_TYPE,
            data=json.dumps({"segments": segments}, ensure_ascii=False),
            metadata={"report": report, "page": page, "unit_id": report},
        )

    def _load_table(
        self, path: Path, documents_dir: Path, quiet: bool = False
    ) -> tuple[list[BenchmarkDocument], list[tuple[str, BenchmarkCase]]]:
        files = {p.stem: p for p in sorted(documents_dir.iterdir()) if p.is_file()}
        documents: dict[str, BenchmarkDocument] = {}
        cases: list[tuple[str, BenchmarkCase]] = []
        skipped_reports: set[str] = set()
        skipped_questions = 0
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle, delimiter="|")
            missing = {"doc_name", "q_uid", "question"} - set(reader.fieldnames or ())
            if missing:
                raise BenchmarkDataError(
                    f"{path}:1: header lacks {sorted(missing)} "
                    "(expected doc_name|q_uid|question|answer_1|...)"
                )
            answer_columns = [f for f in reader.fieldnames or () if f.startswith("answer")]
            for lineno, row in enumerate(reader, start=2):
                report, q_uid = (
                    (row.get("doc_name") or "").strip(),
                    (row.get("q_uid") or "").strip(),
                )
                if not report or not q_uid or not (row.get("question") or "").strip():
                    raise BenchmarkDataError(
                        f"{path}:{lineno}: doc_name, q_uid and question must not be empty"
                    )
                if report not in files:
                    skipped_reports.add(report)
                    skipped_questions += 1
                    continue
                if report not in documents:
                    file = files[report]
                    documents[report] = BenchmarkDocument(
                        document_id=report,
                        name=file.name,
                        media_type=MEDIA_TYPES.get(file.suffix.lower(), "application/octet-stream"),
                        path=file.resolve(),
                        metadata={"report": report, "unit_id": report},
                    )
                page = page_number(q_uid)
                locator: dict[str, Any] = {"document_id": report}
                if page is not None:
                    locator["page_index"] = page - 1
                cases.append(
                    (
                        report,
                        BenchmarkCase(
                            case_id=q_uid,
                            query=row["question"].strip(),
                            expected=BenchmarkExpected(
                                answers=_answers(*(row.get(c) for c in answer_columns)),
                                evidence=(BenchmarkEvidence(reference_id=report, locator=locator),),
                            ),
                            metadata={"report": report, "source_type": "pdf"},
                        ),
                    )
                )
        if skipped_reports and not quiet:
            log.warning(
                "UDA %s: skipped %d reports (%d questions) whose source document is not in %s",
                self.subset,
                len(skipped_reports),
                skipped_questions,
                documents_dir,
            )
        return list(documents.values()), cases

    async def documents(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkDocument]:
        for document in self._loaded[0]:
            yield document

    async def cases(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkCase]:
        for _, case in self._loaded[1]:
            yield case

    async def run_units(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkRunUnit]:
        documents, cases = self._loaded
        by_report: dict[str, list[str]] = {}
        for report, case in cases:
            by_report.setdefault(report, []).append(case.case_id)
        for report, case_ids in by_report.items():
            doc_ids = tuple(d.document_id for d in documents if d.metadata["unit_id"] == report)
            yield BenchmarkRunUnit(unit_id=report, document_ids=doc_ids, case_ids=tuple(case_ids))

    def evaluators(self) -> tuple[BenchmarkEvaluatorProtocol, ...]:
        page = EvidenceMatcher("locator")
        return (
            *(EvidenceRecallAtK(k=k, matcher=page) for k in self.evidence_ks),
            AnswerNumericMatch(rel_tol=self.numeric_rel_tol),
            AnswerContains(target="answer"),
        )
