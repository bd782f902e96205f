"""Parsers: the bytes of a raw source turned into text segments with provenance.

`base` holds what every parser shares (the Parser protocol, ParseError, TextParser); one
module per kind of source (`plain`, `markup`, `tables`, `pdf`); `media_type` chooses among
them by media type. Importing this package needs no optional dependency (pypdf is imported
when a PDF is parsed).
"""

from __future__ import annotations

from heta_eval.kb.parsers.base import SEGMENTS_MEDIA_TYPE, ParseError, Parser, TextParser
from heta_eval.kb.parsers.markup import HtmlParser, MarkdownParser
from heta_eval.kb.parsers.media_type import MediaTypeParser
from heta_eval.kb.parsers.pdf import PdfParser
from heta_eval.kb.parsers.plain import PlainTextParser, SegmentsJsonParser
from heta_eval.kb.parsers.tables import DelimitedTableParser, JsonLinesParser, JsonRecordsParser

__all__ = [
    "SEGMENTS_MEDIA_TYPE",
    "DelimitedTableParser",
    "HtmlParser",
    "JsonLinesParser",
    "JsonRecordsParser",
    "MarkdownParser",
    "MediaTypeParser",
    "ParseError",
    "Parser",
    "PdfParser",
    "PlainTextParser",
    "SegmentsJsonParser",
    "TextParser",
]
