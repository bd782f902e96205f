"""Object stores: where raw benchmark documents live under stable keys."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable


class InvalidKeyError(ValueError):
    """An object key that is not a relative POSIX path inside the store."""


@runtime_checkable
class ObjectStore(Protocol):
    """Key/value store of bytes addressed by relative POSIX keys such as `raw/...`."""

    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes: ...

    def exists(self, key: str) -> bool: ...

    def list(self, prefix: str = "") -> Iterator[str]: ...


def validate_key(key: str) -> PurePosixPath:
    """Return `key` as a path, refusing absolute keys, `..`, empty parts and backslashes."""
    if not key or "\\" in key or "\x00" in key:
        raise InvalidKeyError(f"invalid object key {key!r}")
    path = PurePosixPath(key)
    if path.is_absolute() or any(part in {"", ".", ".."} for part in key.split("/")):
        raise InvalidKeyError(f"object key {key!r} must be a relative path inside the store")
    return path


class LocalObjectStore:
    """An `ObjectStore` on the local filesystem, rooted in one directory.

    Writes are atomic (temporary file + rename), and a put of identical bytes leaves the
    file untouched, so concurrent runs can share one store.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def __repr__(self) -> str:
        return f"LocalObjectStore({str(self.root)!r})"

    def path_of(self, key: str) -> Path:
        """Filesystem path of `key`; raises InvalidKeyError when it would leave the root."""
        path = (self.root / validate_key(key)).resolve()
        if not path.is_relative_to(self.root):
            raise InvalidKeyError(f"object key {key!r} escapes the store root {self.root}")
        return path

    def put(self, key: str, data: bytes) -> None:
        path = self.path_of(key)
        if (
            path.is_file()
            and path.stat().st_size == len(data)
            and hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(data).digest()
        ):
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        path = self.path_of(key)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise KeyError(f"no object {key!r} in {self.root}") from None

    def exists(self, key: str) -> bool:
        return self.path_of(key).is_file()

    def list(self, prefix: str = "") -> Iterator[str]:
        base = self.root / prefix.rstrip("/") if prefix else self.root
        start = base if base.is_dir() else base.parent
        for path in sorted(start.rglob("*")):
            if not path.is_file() or path.name.startswith("."):
                continue
            key = path.relative_to(self.root).as_posix()
            if key.startswith(prefix):
                yield key
