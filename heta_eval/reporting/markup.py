"""Small text helpers shared by the report's HTML parts: escaping, cutting, numbers."""

from __future__ import annotations

from html import escape

TEXT_CHARS = 600  # queries, answers and evidence text are cut to this in tables


def cut(text: str | None, limit: int = TEXT_CHARS) -> str:
    """`text` cut to `limit` characters with an ellipsis ("" for None)."""
    if text is None:
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def escape_text(text: object) -> str:
    """HTML-escaped text of any value (quotes too, so it is safe in attributes)."""
    return escape(str(text), quote=True)


def num(value: float | None, digits: int = 4) -> str:
    """A number with `digits` decimals, or a dash for None."""
    return "—" if value is None else f"{value:.{digits}f}"
