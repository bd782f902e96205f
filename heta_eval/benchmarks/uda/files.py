"""Reading UDA's published files: the pipe-delimited QA tables and the source-document folders."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

from heta_eval.benchmarks.jsonl_files import BenchmarkDataError

# Where the authors publish each subset's source documents, under `src_doc_files/` (the full
# release) or `src_doc_files_example/` (the repository's examples). paper_text and paper_tab
# share their papers; a few feta questions are about pages kept in the nq folder and back.
DOCUMENT_FOLDERS: dict[str, tuple[str, ...]] = {
    "fin": ("fin_docs",),
    "tat": ("tat_docs",),
    "paper_text": ("paper_docs",),
    "paper_tab": ("paper_docs",),
    "feta": ("wiki_feta_docs/pdfs", "wiki_nq_docs/pdfs"),
    "nq": ("wiki_nq_docs/pdfs", "wiki_feta_docs/pdfs"),
}
DOCUMENT_ROOTS = ("src_doc_files", "src_doc_files_example")
TAT_PAGES = "extended_qa_info/tat_doc_page_example"

# sha256 of the published files (dataset/ at commit fca5237).
KNOWN_SHA256 = {
    "qa/fin_qa.csv": "dea42d3f77f2e61bf28f93938809f28e30baacbdc5c4c220c20d61889b49d992",
    "qa/tat_qa.csv": "9f8d2449bbc7469a13b6d88e04fafdcb55d0521fa1bfc4b11988ba8eb94d9669",
    "qa/paper_text_qa.csv": "947e301b61b57173d09bbbc902c307b8f3b4c4a90548f991ac67cbd42d088a5b",
    "qa/paper_tab_qa.csv": "eca7b3618dd5e5b474f398b2e086e3aa45642c961aa09a04f43bc50a203a8a92",
    "qa/feta_qa.csv": "0c324a2e4f9d48faca4309068934df242e2ccae28cdf73cf08018118a7427b23",
    "qa/nq_qa.csv": "20fa0712bcc0ea240ddc57f7e5489313139b4a9d333c98331d7b00856117a074",
    "extended_qa_info_bench/bench_fin_qa.json": (
        "8e023630eed489239f0538038beccbf4069505c39cd8c5bf72f98d23066d17f2"
    ),
    "extended_qa_info_bench/bench_tat_qa.json": (
        "1cbf1cc58f1deb3e0aa39587e3db94f9e375b2529786a4b0ee55e2fb364f6832"
    ),
    "extended_qa_info_bench/bench_paper_text_qa.json": (
        "1aec650b0dd6288b7f9612b1359f6af2aa6bc412d0752e4666fa18264c2cd5b5"
    ),
    "extended_qa_info_bench/bench_paper_tab_qa.json": (
        "09bd45ea9cce84595c4553db8ea8fc75faff4fd2dd99181730159f264da41ec4"
    ),
    "extended_qa_info_bench/bench_feta_qa.json": (
        "673dfc4fcffa93849b84a43b95c335cfe091bb2b0f930b5dc7ace76f28b75725"
    ),
    "extended_qa_info_bench/bench_nq_qa.json": (
        "98ef0a8f5fa792bcc9aa4d6092462616216d0b6c3e9d01012120f2ad9c319956"
    ),
}

# The columns each subset's QA table must have after doc_name|q_uid|question.
ANSWER_COLUMNS: dict[str, tuple[str, ...]] = {
    "fin": ("answer_1", "answer_2"),
    "tat": ("answer", "answer_scale", "answer_type"),
    "paper_text": ("answer_1",),
    "paper_tab": ("answer_1",),
    "feta": ("answer",),
    "nq": ("short_answer", "long_answer"),
}


def document_folders(subset: str, data_root: Path | None, documents_dir: Path | None) -> list[Path]:
    """The folders to look for the subset's source documents in, existing ones first-listed.

    `documents_dir` alone when given; else the published layout under `data_root`.
    """
    if documents_dir is not None:
        return [documents_dir]
    if data_root is None:
        return []
    return [
        data_root / root / folder for folder in DOCUMENT_FOLDERS[subset] for root in DOCUMENT_ROOTS
    ]


def source_files(folders: list[Path]) -> dict[str, Path]:
    """Source documents by name without extension (UDA's `doc_name`); earlier folders win."""
    files: dict[str, Path] = {}
    for folder in folders:
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file() and not path.name.startswith("."):
                    files.setdefault(path.stem, path)
    return files


def read_qa_table(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, row) for each record of a pipe-delimited UDA QA table, every value as text.

    A carriage return that does not end a line (feta_qa.csv holds one inside a question)
    is read as a space instead of ending the record; quoted fields may span lines (paper).
    Errors name the file, the line and what was expected.
    """
    # Decoded by hand: text-mode reading would turn the bare carriage return into a line end.
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BenchmarkDataError(f"{path}: not UTF-8 at byte {exc.start} ({exc.reason})") from None
    text = text.replace("\r\n", "\n").replace("\r", " ")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="|")
    header = next(reader, None)
    if header is None:
        raise BenchmarkDataError(f"{path}:1: empty file (expected a header line)")
    header = [h.strip() for h in header]
    missing = [c for c in required if c not in header]
    if missing:
        raise BenchmarkDataError(
            f"{path}:1: header lacks {sorted(missing)} (expected {'|'.join(required)}|...)"
        )
    line = reader.line_num + 1
    for record in reader:
        if record and any(cell.strip() for cell in record):
            if len(record) != len(header):
                raise BenchmarkDataError(
                    f"{path}:{line}: {len(record)} fields, expected {len(header)} "
                    f"({'|'.join(header)})"
                )
            yield line, dict(zip(header, record, strict=True))
        line = reader.line_num + 1


def pdf_text(path: Path) -> str:
    """A PDF's text, pages joined (pypdf); used for TAT-QA's one-page evidence PDFs."""
    import logging

    import pypdf

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = pypdf.PdfReader(path)
        return "\n".join(page.extract_text() or "" for page in reader.pages)
    except Exception as exc:
        raise BenchmarkDataError(f"{path}: unreadable PDF ({type(exc).__name__}: {exc})") from None
