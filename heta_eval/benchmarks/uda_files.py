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
