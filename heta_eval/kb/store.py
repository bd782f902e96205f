"""Object stores: where raw benchmark documents live under stable keys."""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from heta_eval.files import file_mode, temp_prefix


class InvalidKeyError(ValueError):
    """An object key that is not a relative POSIX path inside the store."""


@runtime_checkable
class ObjectStore(Protocol):
    """Key/value store of bytes addressed by relative POSIX keys such as `raw/...`."""

    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes: ...

    def exists(self, key: str) -> bool: ...

    def list(self, prefix: str = "") -> Iterator[str]: ...


def check_key(key: str) -> None:
    """Refuse absolute keys, `..`, empty parts, backslashes and NUL (InvalidKeyError)."""
    if not key or "\\" in key or "\x00" in key:
        raise InvalidKeyError(f"invalid object key {key!r}")
    if key.startswith("/") or any(part in {"", ".", ".."} for part in key.split("/")):
        raise InvalidKeyError(f"object key {key!r} must be a relative path inside the store")


class LocalObjectStore:
    """An `ObjectStore` on the local filesystem, rooted in one directory.

    Writes are atomic (temporary file + rename), and a put of identical bytes leaves the
    file untouched, so concurrent runs can share one store. Keys never leave the root, even
    through symlinks; directories already resolved are remembered, so a key costs one
    `lstat` per directory the first time and none after.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        # Directory key -> its resolved path, for existing directories inside the root.
        # Plain strings: this is the hot path of writing and reading thousands of objects.
        self._root = str(self.root)
        self._dirs: dict[str, str] = {"": self._root}

    def __repr__(self) -> str:
        return f"LocalObjectStore({self._root!r})"

    def _inside(self, path: str, key: str) -> str:
        """`path` with symlinks resolved; InvalidKeyError when that leaves the root."""
        resolved = os.path.realpath(path)
        if resolved != self._root and not resolved.startswith(self._root + os.sep):
            raise InvalidKeyError(f"object key {key!r} escapes the store root {self.root}")
        return resolved

    def _resolve(self, key: str) -> tuple[str, bool]:
        """Resolved path of the checked key `key`, and whether it exists.

        Each directory part is `lstat`ed once; existing directories are remembered.
        """
        head, _, name = key.rpartition("/")
        parent = self._dirs.get(head)
        if parent is None:
            parent, exists = self._resolve(head)
            if not exists:
                return f"{parent}/{name}", False
        path = f"{parent}/{name}"
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return path, False
        if stat.S_ISLNK(mode):
            path = self._inside(path, key)
            try:
                mode = os.stat(path).st_mode
            except FileNotFoundError:  # a dangling link inside the root
                return path, False
        if stat.S_ISDIR(mode):
            self._dirs[key] = path
        return path, True

    def _directory(self, key: str) -> str:
        """Resolved path of directory `key`, created (with its parents) if missing."""
        path = self._dirs.get(key)
        if path is not None:
            return path
        head, _, name = key.rpartition("/")
        path = f"{self._directory(head)}/{name}"
        try:
            os.mkdir(path)  # just made inside a resolved directory: no symlink to follow
        except FileExistsError:
            path, _ = self._resolve(key)
        self._dirs[key] = path
        return path

    def path_of(self, key: str) -> Path:
        """Filesystem path of `key`; raises InvalidKeyError when it would leave the root."""
        check_key(key)
        return Path(self._resolve(key)[0])

    def _new_directory(self, key: str) -> str | None:
        """Resolved path of directory `key` if this call made it (so it is empty), else None.

        Only tried when its parent is already resolved; saves the `lstat` of a key's directory
        in the common case of writing a new object into a new directory.
        """
        head, _, name = key.rpartition("/")
        parent = self._dirs.get(head)
        if parent is None:
            return None
        path = f"{parent}/{name}"
        try:
            os.mkdir(path)  # inside a resolved directory; an existing link makes this fail
        except OSError:
            return None
        self._dirs[key] = path
        return path

    def put(self, key: str, data: bytes) -> None:
        check_key(key)
        head, _, name = key.rpartition("/")
        made = None if head in self._dirs else self._new_directory(head)
        path, exists = (f"{made}/{name}", False) if made is not None else self._resolve(key)
        if exists:
            try:
                info = os.stat(path)
                if stat.S_ISREG(info.st_mode) and info.st_size == len(data):
                    with open(path, "rb") as handle:
                        if handle.read() == data:
                            return
            except FileNotFoundError:
                pass
        else:
            path = f"{self._directory(head)}/{name}"
        directory, _, name = path.rpartition("/")
        prefix = temp_prefix(name)  # a long legal name must not make an illegal temp name
        tmp = f"{directory}/{prefix}{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            # Created with the mode the umask gives a new file: no chmod (and no reading of
            # the umask) for each of a benchmark's many thousand objects.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:  # left behind by a crashed process with the same pid
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=".tmp")
            os.fchmod(fd, file_mode())  # mkstemp's file is 0600
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get(self, key: str) -> bytes:
        check_key(key)
        try:
            with open(self._resolve(key)[0], "rb") as handle:
                return handle.read()
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


class WrittenBytesStore:
    """`store`, answering `get` for objects just written from the bytes still in memory.

    `written` maps keys to the very bytes a successful `put` stored under them, so a build
    that follows the writes reads exactly what the store holds without reading the files
    again. Other keys, `list`, and every `put` (which forgets the key's bytes in memory)
    go to the underlying store.
    """

    def __init__(self, store: ObjectStore, written: dict[str, bytes]) -> None:
        self.store = store
        self._written = written

    def __repr__(self) -> str:
        return f"WrittenBytesStore({self.store!r}, {len(self._written)} objects in memory)"

    def put(self, key: str, data: bytes) -> None:
        self._written.pop(key, None)
        self.store.put(key, data)

    def get(self, key: str) -> bytes:
        data = self._written.get(key)
        return data if data is not None else self.store.get(key)

    def exists(self, key: str) -> bool:
        return key in self._written or self.store.exists(key)

    def list(self, prefix: str = "") -> Iterator[str]:
        return self.store.list(prefix)
