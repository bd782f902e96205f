"""UDA documents: a source file as it is, or a finance page from the text the bench ships."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from heta_eval.records import BenchmarkDocument
from heta_eval.records.benchmark import SEGMENTS_MEDIA_TYPE

MEDIA_TYPES = {
    ".pdf": "application/pdf",
    ".html": "text/html",
    ".htm": "text/html",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".json": "application/json",
}


def render_row(header: list[str], row: list[str]) -> str:
    """A table row as text that keeps its column headers: `label: col = value; ...`."""
    if not header or len(header) != len(row) or not row:
        return " | ".join(row)
    cells = [f"{h} = {v}" for h, v in zip(header[1:], row[1:], strict=True) if str(v).strip()]
    return f"{row[0]}: " + "; ".join(cells)


def file_document(doc_name: str, path: Path, document_id: str | None = None) -> BenchmarkDocument:
    return BenchmarkDocument(
        document_id=document_id or doc_name,
        name=path.name,
        media_type=MEDIA_TYPES.get(path.suffix.lower(), "application/octet-stream"),
        path=path.resolve(),
        metadata={"report": doc_name, "unit_id": doc_name},
    )


def page_document(
    doc_id: str, report: str, page: int, context: dict[str, Any]
) -> BenchmarkDocument:
    """A finance page (pre-segmented): its text blocks and each table row with its headers."""
    locator = {"page_index": page - 1}
    pre, table, post = context["pre_text"], context["table"], context["post_text"]
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
