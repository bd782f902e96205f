"""Shared base for every record that crosses a boundary."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints

NonEmptyStr = Annotated[str, StringConstraints(min_length=1, strip_whitespace=False)]
"""A string that must not be empty (ids, names, queries)."""

JsonDict = dict[str, Any]


class Record(BaseModel):
    """Frozen, validated-on-construction pydantic model; unknown fields are an error."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


def check_bare_name(value: str, field: str) -> str:
    """Refuse file names that are paths (separators, `.`/`..`, NUL) so keys cannot escape."""
    if "/" in value or "\\" in value or "\x00" in value or value in {".", ".."}:
        raise ValueError(f"{field} must be a bare file name without path separators, got {value!r}")
    return value


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
