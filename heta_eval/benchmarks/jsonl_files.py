"""Reading JSON Lines files with errors that name the file, the line and the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

Model = TypeVar("Model", bound=BaseModel)

# Bounds on one line of a JSON Lines file: its bytes (a longer document belongs in a file
# named by `path`) and how deep its arrays and objects nest (records are a few levels deep;
# a line nested thousands deep would exhaust the recursion of the parser and every writer).
MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_NESTING = 100
NESTING_LIMIT = 500  # the most `max_nesting` may allow: Python's JSON parser stops near 1000
_READ_BUFFER = 1 << 20


class BenchmarkDataError(ValueError):
    """Malformed benchmark data, located by file and line."""


def _nesting(value: Any) -> int:
    """How deep arrays and objects nest in `value` (0 for a scalar); no recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def iter_jsonl(
    path: Path, *, max_line_bytes: int = MAX_LINE_BYTES, max_nesting: int = MAX_NESTING
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a UTF-8 JSONL file.

    Lines are read as bytes and decoded one at a time, so a file in another encoding
    (Latin-1, UTF-16) fails naming the line and byte offset of the first undecodable byte.
    A line longer than `max_line_bytes` (read no further than that) or nested deeper than
    `max_nesting` levels is refused naming the file, the line and the bound.
    """
    try:
        # A 1 MB buffer: with the default 8 KB, a corpus of 1 KB lines costs a read call
        # every few lines (200k lines: 0.29-0.43 s of reading against 0.13 s).
        handle = path.open("rb", buffering=_READ_BUFFER)
    except FileNotFoundError:
        raise BenchmarkDataError(f"{path}: file not found") from None
    with handle:
        offset = 0
        lineno = 0
        while raw := handle.readline(max_line_bytes + 1):
            lineno += 1
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                raise BenchmarkDataError(
                    f"{path}:{lineno}: line longer than {max_line_bytes} bytes (the bound on "
                    "a JSON Lines line; put a long document in a file and name it with `path`)"
                )
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
            except RecursionError:  # nested deeper than the parser goes
                too_deep = True
            else:
                # Nothing nests deeper than its line has brackets (counted in C): the walk
                # is needed only for the rare line with more of them than the bound.
                openers = raw.count(b"{") + raw.count(b"[")
                too_deep = openers > max_nesting and _nesting(value) > max_nesting
            if too_deep:
                raise BenchmarkDataError(
                    f"{path}:{lineno}: arrays and objects nested more than {max_nesting} levels "
                    "deep (the bound on a JSON Lines record)"
                )
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
