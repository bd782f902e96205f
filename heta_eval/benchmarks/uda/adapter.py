"""UDA-Benchmark: document QA where each question is bound to one source document."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from heta_eval.benchmarks.download import cache_dir, fetch_resource
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError
from heta_eval.benchmarks.uda.answers import (
    ANSWER_KEY,
    AnswerOptions,
    FetaAnswerF1,
    FinQAExactMatch,
    NqAnswerF1,
    QasperAnswerF1,
    TatQAExactMatch,
    TatQAF1,
)
from heta_eval.benchmarks.uda.documents import file_document, page_document
from heta_eval.benchmarks.uda.entries import UdaQuestion, bench_question, row_question
from heta_eval.benchmarks.uda.evidence import (
    EVIDENCE_KEY,
    PAGES_KEY,
    PageEvidenceRecallAtK,
    UdaEvidenceMatchAtK,
)
from heta_eval.benchmarks.uda.files import (
    ANSWER_COLUMNS,
    KNOWN_SHA256,
    TAT_PAGES,
    document_folders,
    pdf_text,
    read_qa_table,
    source_files,
)
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

__all__ = ["SUBSETS", "UdaBenchmark"]

log = logging.getLogger(__name__)

REPO_URL = "https://raw.githubusercontent.com/qinchuanhui/UDA-Benchmark/main/dataset"
CITATION = (
    "Hui, Y., Lu, Y., Zhang, H. UDA: A Benchmark Suite for Retrieval Augmented Generation in "
    "Real-world Document Analysis. NeurIPS 2024 Datasets and Benchmarks."
)
SUBSETS = ("fin", "tat", "paper_tab", "paper_text", "feta", "nq")
Source = Literal["bench", "qa_table", "mixed"]
Loaded = tuple[list[BenchmarkDocument], list[tuple[str, BenchmarkCase]]]


class UdaBenchmark(BenchmarkAdapter):
    """UDA-Benchmark, all six subsets, one knowledge base per source document.

    Subsets: `fin` (FinQA reports), `tat` (TAT-QA reports), `paper_text` and `paper_tab`
    (Qasper papers, shared `paper_docs/`), `feta` and `nq` (Wikipedia pages). Questions are
    bound to one document each, so every document is its own run unit. Sources:

    - `bench`: the sampled questions `extended_qa_info_bench/bench_{subset}_qa.json`, with
      their evidence. fin ships each question's page (`pre_text`, `table`, `post_text`):
      a document is that page (`{report}-page_{N}`, text blocks and table rows). The other
      subsets are read from their source documents (see `documents_dir`).
    - `qa_table`: every question of `qa/{subset}_qa.csv` with the source documents; the
      evidence of a question that is also in the bench comes from there (nq: the long
      answer column).
    - `mixed`: documents whose source file is present are evaluated from it with the QA
      table's questions; the others from what the bench ships: fin the page text, tat the
      one evidence page PDF where `extended_qa_info/tat_doc_page_example/` has it (the
      other subsets ship no document text). The report slices scores by `source_type`.

    Questions whose document is absent are skipped with one warning counting them.
    Source documents are found in the published layout under `data_root`
    (`src_doc_files[_example]/fin_docs`, `tat_docs`, `paper_docs`, `wiki_feta_docs/pdfs`,
    `wiki_nq_docs/pdfs`; the two wiki folders are searched both) or in `documents_dir`.

    Scoring (the benchmark's own): `evidence_recall@k` on the page (fin page numbers,
    0-based `page_index`), skipped with its reason where the evidence names only the
    document or the knowledge base is one page; `uda_evidence_match@k`, UDA's LCS evidence
    match (tat: `uda_evidence_match_ext@k`, our extension, as the authors score no tat
    retrieval); both skipped per case when the top k holds the whole knowledge base; and
    the subset's answer metrics (fin `finqa_exact_match`, tat `tatqa_exact_match`/
    `tatqa_f1`, paper `qasper_answer_f1`, feta `feta_answer_f1`, nq `nq_answer_f1`),
    skipped when the recipe generates no answers. Answers are scored exactly as the
    authors' `uda/eval` code scores them; `answer_options` (see `AnswerOptions`) names
    corrections to choose instead. See docs/uda-scoring.md.
    """

    default_top_k = 10

    def __init__(
        self,
        subset: str = "fin",
        source: Source = "bench",
        data_root: str | Path | None = None,
        documents_dir: str | Path | None = None,
        evidence_ks: tuple[int, ...] | list[int] = (1, 3, 5),
        answer_options: Mapping[str, Any] | None = None,
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
        self.answer_options = AnswerOptions.of(answer_options)
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
        self._tat_page_texts: dict[str, str | None] = {}
        # The mixed source reports its scores per source type (source file versus bench text).
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

    def _needs_documents(self) -> bool:
        return self.source != "bench" or self.subset != "fin"

    async def prepare(self, workspace: BenchmarkWorkspace) -> PreparedBenchmark:
        member = self._member()
        if self.data_root is not None:
            path = self.data_root / member
            if not path.is_file():
                raise BenchmarkDataError(
                    f"benchmark.data_root: {path} not found (UDA layout: {member})"
                )
        else:
            (resource,) = self.resources()
            path = fetch_resource(
                resource, cache_dir() / "uda" / Path(member).parent, offline=workspace.offline
            )
        paths = {"questions": path.resolve()}
        if self._needs_documents():
            paths["documents"] = self._documents_dir().resolve()
        root = self.data_root or Path()
        if self.source == "mixed":
            table = root / f"qa/{self.subset}_qa.csv"
            if not table.is_file():
                raise BenchmarkDataError(f"benchmark.data_root: {table} not found (mixed source)")
            paths["table"] = table.resolve()
        bench = root / f"extended_qa_info_bench/bench_{self.subset}_qa.json"
        if self.source == "qa_table" and self.data_root is not None and bench.is_file():
            paths["bench"] = bench.resolve()  # evidence of the questions it samples
        if self.subset == "tat" and self.data_root is not None and (root / TAT_PAGES).is_dir():
            paths["tat_pages"] = (root / TAT_PAGES).resolve()
        self._prepared = PreparedBenchmark(
            manifest=self.manifest, root=path.parent.resolve(), paths=paths
        )
        return self._prepared

    def _folders(self) -> list[Path]:
        return document_folders(self.subset, self.data_root, self.documents_dir)

    def _documents_dir(self) -> Path:
        folders = self._folders()
        for folder in folders:
            if folder.is_dir():
                return folder
        looked = [str(c) for c in folders] or "nothing: set benchmark.data_root"
        raise BenchmarkDataError(
            f"benchmark.documents_dir: UDA {self.subset} ({self.source}) needs the source "
            f"documents (looked in {looked}); "
            "download them from the UDA-Benchmark release and point documents_dir at them"
        )

    # --- reading -------------------------------------------------------------------------

    @cached_property
    def _files(self) -> dict[str, Path]:
        return source_files(self._folders())

    def _tat_page(self, uid: str) -> str | None:
        """The text of TAT-QA's one-page evidence PDF `uid`, where the dataset ships it."""
        assert self._prepared is not None
        pages = self._prepared.paths.get("tat_pages")
        if pages is None or not (pages / f"{uid}.pdf").is_file():
            return None
        if uid not in self._tat_page_texts:
            self._tat_page_texts[uid] = pdf_text(pages / f"{uid}.pdf") or None
        return self._tat_page_texts[uid]

    def _bench_questions(self, path: Path, with_pages: bool = True) -> list[UdaQuestion]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise BenchmarkDataError(
                f"{path}:{exc.lineno}: invalid JSON at column {exc.colno}: {exc.msg}"
            ) from None
        if not isinstance(data, dict):
            raise BenchmarkDataError(f"{path}: expected an object keyed by document name")
        pages = self._tat_page if with_pages else (lambda uid: None)
        questions = []
        for doc, entries in data.items():
            if not isinstance(entries, list):
                raise BenchmarkDataError(f"{path}[{doc!r}]: expected a list of questions")
            for i, entry in enumerate(entries):
                where = f"{path}[{doc!r}][{i}]"
                question = bench_question(self.subset, doc, entry, where, pages)
                if self.subset == "fin" and question.page is None:
                    raise BenchmarkDataError(f"{where}.q_uid: no page_N in {question.q_uid!r}")
                questions.append(question)
        return questions

    def _table_questions(self, path: Path, bench: Path | None) -> list[UdaQuestion]:
        joined = {(q.doc_name, q.q_uid): q for q in self._bench_questions(bench)} if bench else {}
        required = ("doc_name", "q_uid", "question", *ANSWER_COLUMNS[self.subset][:1])
        questions = []
        for line, row in read_qa_table(path, required):
            question = row_question(self.subset, row, f"{path}:{line}")
            sampled = joined.get((question.doc_name, question.q_uid))
            if sampled is not None and sampled.evidence is not None:
                question = replace(question, evidence=sampled.evidence)
            questions.append(question)
        return questions

    @cached_property
    def _loaded(self) -> Loaded:
        assert self._prepared is not None, "prepare() first"
        paths = self._prepared.paths
        if self.source == "bench":
            questions = self._bench_questions(paths["questions"])
            if self.subset == "fin":
                return self._from_pages(questions)
            return self._from_files(questions)
        if self.source == "qa_table":
            return self._from_files(self._table_questions(paths["questions"], paths.get("bench")))
        # Mixed: documents whose source file is present from it, with the QA table's
        # questions; the bench's other documents from the text the bench ships for them.
        table = self._table_questions(paths["table"], paths["questions"])
        documents, cases = self._from_files(table, quiet=True)
        present = {d.metadata["report"] for d in documents}
        rest = [
            q
            for q in self._bench_questions(paths["questions"], with_pages=False)
            if q.doc_name not in present
        ]
        if self.subset == "fin":
            more = self._from_pages(rest)
        elif self.subset == "tat":
            more = self._from_tat_pages(rest)
        else:
            more = ([], [])
            _warn_skipped(self.subset, rest, "the bench ships no text of their documents")
        return documents + more[0], cases + more[1]

    def _from_pages(self, questions: list[UdaQuestion]) -> Loaded:
        documents: dict[str, BenchmarkDocument] = {}
        cases = []
        for q in questions:
            assert q.page is not None
            doc_id = f"{q.doc_name}-page_{q.page}"
            if doc_id not in documents:
                documents[doc_id] = page_document(doc_id, q.doc_name, q.page, q.metadata["context"])
            cases.append((q.doc_name, self._case(q, doc_id, q.page, "page_text")))
        return list(documents.values()), cases

    def _from_tat_pages(self, questions: list[UdaQuestion]) -> Loaded:
        pages = self._prepared.paths.get("tat_pages") if self._prepared else None
        documents: dict[str, BenchmarkDocument] = {}
        cases, skipped = [], []
        for q in questions:
            uid = q.metadata.get("doc_page_uid")
            file = pages / f"{uid}.pdf" if pages and uid else None
            if file is None or not file.is_file():
                skipped.append(q)
                continue
            # The knowledge base is that page: the facts are the evidence, not the page.
            doc_id = f"{q.doc_name}-page_{uid}"
            documents.setdefault(doc_id, file_document(q.doc_name, file, doc_id))
            cases.append((q.doc_name, self._case(q, doc_id, None, "page_pdf")))
        _warn_skipped(self.subset, skipped, "neither the report nor its evidence page is here")
        return list(documents.values()), cases

    def _from_files(self, questions: list[UdaQuestion], quiet: bool = False) -> Loaded:
        documents: dict[str, BenchmarkDocument] = {}
        cases, skipped = [], []
        for q in questions:
            file = self._files.get(q.doc_name)
            if file is None:
                skipped.append(q)
                continue
            documents.setdefault(q.doc_name, file_document(q.doc_name, file))
            page = q.page if file.suffix.lower() == ".pdf" else None
            cases.append((q.doc_name, self._case(q, q.doc_name, page, "pdf")))
        if not quiet:
            _warn_skipped(
                self.subset,
                skipped,
                f"their source document is not in {[str(f) for f in self._folders()]}",
            )
        return list(documents.values()), cases

    def _case(
        self, q: UdaQuestion, doc_id: str, page: int | None, source_type: str
    ) -> BenchmarkCase:
        locator: dict[str, Any] = {"document_id": doc_id}
        if page is not None:
            locator["page_index"] = page - 1  # page_59 is the 59th page: page_index 58
        metadata = {k: v for k, v in q.metadata.items() if k != "context" and v is not None}
        # A finance page from the bench is its own document: one page.
        pages = {PAGES_KEY: 1} if source_type == "page_text" else {}
        expected_metadata: dict[str, Any] = {ANSWER_KEY: q.answer}
        if q.evidence is not None:
            expected_metadata[EVIDENCE_KEY] = q.evidence
        return BenchmarkCase(
            case_id=q.q_uid,
            query=q.question,
            expected=BenchmarkExpected(
                answers=q.answers,
                evidence=(BenchmarkEvidence(reference_id=doc_id, locator=locator, metadata=pages),),
                metadata=expected_metadata,
            ),
            metadata={"report": q.doc_name, "source_type": source_type, **metadata},
        )

    # --- protocol --------------------------------------------------------------------------

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
        options = self.answer_options
        answers: dict[str, tuple[BenchmarkEvaluatorProtocol, ...]] = {
            "fin": (FinQAExactMatch(options),),
            "tat": (TatQAExactMatch(options), TatQAF1(options)),
            "paper_text": (QasperAnswerF1(options),),
            "paper_tab": (QasperAnswerF1(options),),
            "feta": (FetaAnswerF1(options),),
            "nq": (NqAnswerF1(options),),
        }
        return (
            *(PageEvidenceRecallAtK(k=k) for k in self.evidence_ks),
            # The authors score no tat retrieval: ours is named as an extension.
            *(UdaEvidenceMatchAtK(k=k, extension=self.subset == "tat") for k in self.evidence_ks),
            *answers[self.subset],
        )


def _warn_skipped(subset: str, questions: Iterable[UdaQuestion], why: str) -> None:
    questions = list(questions)
    if questions:
        log.warning(
            "UDA %s: skipped %d documents (%d questions): %s",
            subset,
            len({q.doc_name for q in questions}),
            len(questions),
            why,
        )
