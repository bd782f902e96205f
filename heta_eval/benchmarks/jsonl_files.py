"""Reading JSON Lines files with errors that name the file, the line and the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

Model = TypeVar("Model", bound=BaseModel)


class BenchmarkDataError(ValueError):
    """Malformed benchmark data, located by file and line."""


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a UTF-8 JSONL file.

    Lines are read as bytes and decoded one at a time, so a file in another encoding
    (Latin-1, UTF-16) fails naming the line and byte offset of the first undecodable byte.
    """
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise BenchmarkDataError(f"{path}: file not found") from None
    with handle:
        offset = 0
        for lineno, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise BenchmarkDataError(
                    f"{path}:{lineno}: not valid UTF-8 at byte {offset + exc.start} of the file "
                    f"({exc.reason}); the file must be UTF-8: re-encode it, e.g. "
                    f"`iconv -f latin1 -t utf-8`"
                ) from None
            offset += len(raw)
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BenchmarkDataError(
                    f"{path}:{lineno}: invalid JSON at column {exc.colno}: {exc.msg}"
                ) from None
            if not isinstance(value, dict):
                raise BenchmarkDataError(
                    f"{path}:{lineno}: expected a JSON object, got {type(value).__name__}"
                )
            yield lineno, value


def describe_validation_error(path: Path, lineno: int, error: ValidationError) -> str:
    """One readable message per invalid field: `file:line: field: problem (got value)`."""
    parts = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"]) or "(record)"
        got = item.get("input")
        shown = "" if isinstance(got, dict) else f" (got {got!r:.80})"
        parts.append(f"{path}:{lineno}: {field}: {item['msg']}{shown}")
    return "\n".join(parts)


def validate_line(model: type[Model], record: dict[str, Any], path: Path, lineno: int) -> Model:
    """Validate one line's record as `model`; errors name the file, line and fields."""
    try:
        return model.model_validate(record)
    except ValidationError as exc:
        raise BenchmarkDataError(describe_validation_error(path, lineno, exc)) from None
