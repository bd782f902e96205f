"""The PDF parser: text page by page with pypdf (imported when a PDF is parsed)."""

from __future__ import annotations

from heta_eval.kb.documents import ParsedSource, RawSource
from heta_eval.kb.parsers.base import ParseError, join_segments


class PdfParser:
    """Extracts PDF text page by page with pypdf; each page is a segment.

    Provenance: `page_index` is 0-based (the first page is 0), so "page 59" of a report in
    1-based numbering has `page_index=58`. Empty pages yield no chunk. An unreadable PDF
    raises ParseError (recorded as a document error; the rest of the unit builds).

    Pages are joined by `page_separator` (a blank line); `""` joins them as PyPDF2-based
    pipelines such as UDA's baseline do, which matters to chunkers that cross pages.
    """

    def __init__(self, extraction_mode: str = "plain", page_separator: str = "\n\n") -> None:
        if extraction_mode not in ("plain", "layout"):
            raise ValueError(
                f"extraction_mode must be 'plain' or 'layout', got {extraction_mode!r}"
            )
        self.extraction_mode = extraction_mode
        self.page_separator = page_separator

    def parse(self, source: RawSource, data: bytes) -> ParsedSource:
        import io
        import logging

        import pypdf

        # pypdf reports recoverable oddities of real-world PDFs as warnings on its logger.
        logging.getLogger("pypdf").setLevel(logging.ERROR)
        try:
            reader = pypdf.PdfReader(io.BytesIO(data))
            pages = [
                page.extract_text(extraction_mode=self.extraction_mode) or ""
                for page in reader.pages
            ]
        except Exception as exc:
            raise ParseError(
                f"{source.key}: unreadable PDF ({type(exc).__name__}: {exc})"
            ) from None
        parts = [(text, {"page_index": i}) for i, text in enumerate(pages)]
        return join_segments(source, parts, self.page_separator)
