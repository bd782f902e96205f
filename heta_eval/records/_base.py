"""Shared base for every record that crosses a boundary."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints

NonEmptyStr = Annotated[str, StringConstraints(min_length=1, strip_whitespace=False)]
"""A string that must not be empty (ids, names, queries)."""

JsonDict = dict[str, Any]


class Record(BaseModel):
    """Frozen, validated-on-construction pydantic model; unknown fields are an error."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


# A file name may have at most this many bytes (UTF-8) on the file systems runs write to.
MAX_NAME_BYTES = 255
MAX_ID_CHARS = 1_000
"""An id (case, document, unit, a replayed docid or run tag) may have at most this many
characters: longer ones are no ids (an 80 MB docid is a broken file)."""
# Characters that reorder how text is displayed (Trojan Source, CVE-2021-42574): an id that
# holds one reads as another id in a terminal, a report or the MLflow UI.
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def check_plain_id(value: str, field: str) -> str:
    """Refuse an id longer than `MAX_ID_CHARS`, or with a control character (NUL, newline,
    tab, ...), a line or paragraph separator, a bidirectional control or another invisible
    formatting character (a zero-width space, a soft hyphen): it would print as something
    else, or break the line-oriented files and logs it is written to."""
    if len(value) > MAX_ID_CHARS:
        raise ValueError(
            f"{field} is {len(value)} characters long; an id may have at most {MAX_ID_CHARS} "
            f"(got {value[:60]!r}...)"
        )
    if value.isascii() and value.isprintable():
        # The common case, checked in C: every ASCII control character is unprintable, and
        # line/paragraph separators and bidirectional controls are not ASCII.
        return value
    for position, char in enumerate(value):
        if char in _BIDI_CONTROLS:
            what = "a bidirectional control character"
        elif unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            what = "a control character" if char not in "\n\r\u2028\u2029" else "a line break"
        elif unicodedata.category(char) == "Cf":
            what = "an invisible formatting character (zero-width or soft hyphen)"
        else:
            continue
        raise ValueError(
            f"{field} must be a plain name: {what} (U+{ord(char):04X}) at position {position} "
            f"of {value!r:.120}"
        )
    return value


def check_bare_name(value: str, field: str) -> str:
    """Refuse file names that are paths (separators, `.`/`..`, NUL), longer than a file name
    may be, or not plain (`check_plain_id`), so keys cannot escape and every name can be
    stored."""
    if "/" in value or "\\" in value or value in {".", ".."}:
        raise ValueError(f"{field} must be a bare file name without path separators, got {value!r}")
    size = len(value.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        raise ValueError(
            f"{field} is {size} bytes long in UTF-8; a file name may have at most "
            f"{MAX_NAME_BYTES} (got {value!r:.60}...)"
        )
    return check_plain_id(value, field)


def check_unique(ids: list[str], what: str) -> None:
    """Raise ValueError listing the ids that occur more than once."""
    seen: set[str] = set()
    duplicates: list[str] = []
    for item in ids:
        if item in seen and item not in duplicates:
            duplicates.append(item)
        seen.add(item)
    if duplicates:
        shown = ", ".join(repr(d) for d in duplicates[:5])
        more = f" (and {len(duplicates) - 5} more)" if len(duplicates) > 5 else ""
        raise ValueError(f"duplicate {what}: {shown}{more}")
