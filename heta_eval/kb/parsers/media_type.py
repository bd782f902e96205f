"""MediaTypeParser: the parser of a source chosen by its media type (the default of recipes)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

from heta_eval.kb.documents import ParsedSource, RawSource
from heta_eval.kb.parsers.base import SEGMENTS_MEDIA_TYPE, ParseError, Parser, not_a_parser
from heta_eval.kb.parsers.markup import HtmlParser, MarkdownParser
from heta_eval.kb.parsers.pdf import PdfParser
from heta_eval.kb.parsers.plain import PlainTextParser, SegmentsJsonParser
from heta_eval.kb.parsers.tables import DelimitedTableParser, JsonRecordsParser


class MediaTypeParser:
    """Chooses a parser by media type from `parsers` (glob patterns such as `text/*`).

    The first matching pattern wins; an unmatched media type raises ParseError naming the
    key, its media type and the types this recipe reads.
    """

    def __init__(self, parsers: Mapping[str, Parser] | None = None) -> None:
        if parsers is None:
            # First match wins: specific text types come before the `text/*` fallback.
            parsers = {
                "text/markdown": MarkdownParser(),
                "text/html": HtmlParser(),
                "text/csv": DelimitedTableParser(),
                "text/tab-separated-values": DelimitedTableParser(),
                "text/*": PlainTextParser(),
                "application/json": JsonRecordsParser(),
                "application/x-ndjson": JsonRecordsParser(),
                "application/jsonl": JsonRecordsParser(),
                "application/pdf": PdfParser(),
                SEGMENTS_MEDIA_TYPE: SegmentsJsonParser(),
            }
        for pattern, candidate in parsers.items():
            why = not_a_parser(candidate)
            if why is not None:
                raise TypeError(f"parsers[{pattern!r}]: {why}")
        self.parsers: dict[str, Parser] = dict(parsers)
        self._chosen: dict[str, Parser] = {}  # media type -> the first matching parser

    def parse(self, source: RawSource, data: bytes) -> ParsedSource:
        parser = self._chosen.get(source.media_type)
        if parser is None:
            for pattern, candidate in self.parsers.items():
                if fnmatch.fnmatchcase(source.media_type, pattern):
                    parser = self._chosen[source.media_type] = candidate
                    break
        if parser is not None:
            return parser.parse(source, data)
        raise ParseError(
            f"{source.key}: no parser for media type {source.media_type!r}; "
            f"this recipe reads {sorted(self.parsers)}"
        )
