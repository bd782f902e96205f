"""The shared heta_eval cache directory, and a small on-disk cache of JSON entries in it keyed
by the sha256 of what produced them."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from heta_eval.files import file_mode

log = logging.getLogger(__name__)

CACHE_ENV_VAR = "HETA_EVAL_CACHE"
"""The environment variable naming the shared heta_eval cache (default ~/.cache/heta_eval)."""


def cache_dir(configured: str | os.PathLike[str] | None = None) -> Path:
    """The shared cache: `configured`, else `$HETA_EVAL_CACHE`, else ~/.cache/heta_eval.

    Downloads, judge verdicts, generated answers and embeddings live under it. The directory
    is created if missing and returned as an absolute path.
    """
    if configured is not None and str(configured):
        chosen = Path(configured)
    elif os.environ.get(CACHE_ENV_VAR):
        chosen = Path(os.environ[CACHE_ENV_VAR])
    else:
        chosen = Path("~/.cache/heta_eval")
    path = chosen.expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_directory(setting: str | os.PathLike[str] | None, subdir: str) -> Path:
    """`setting`, or `{heta_eval cache}/{subdir}` when it is None or empty; created."""
    if setting is not None and str(setting):
        path = Path(setting).expanduser().resolve()
    else:
        path = cache_dir() / subdir
    path.mkdir(parents=True, exist_ok=True)
    return path


_failed_writes: set[tuple[str, int | None]] = set()


def _warn_once(path: Path, exc: OSError) -> None:
    """A cache file that could not be written costs only the reuse: warned once per
    directory and error (a full disk fails every write after the first), then logged at
    debug level."""
    key = (str(path.parent), exc.errno)
    if key in _failed_writes:
        log.debug("could not write cache file %s (%s)", path, exc)
        return
    _failed_writes.add(key)
    log.warning(
        "could not write cache file %s (%s); further failures in %s are not repeated",
        path,
        exc,
        path.parent,
    )


def write_atomically(path: Path, write: Callable[[IO[bytes]], None]) -> bool:
    """Write `path` through a temporary file and a rename; False (and a warning) on failure."""
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:16]}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(fd, file_mode())
            write(handle)
        os.replace(tmp, path)
        tmp = None
        return True
    except OSError as exc:
        _warn_once(path, exc)
        return False
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


DIGEST_SUFFIX = ".sha256"


def digest_path(path: Path) -> Path:
    """Where the digest of the cache file `path` is kept: beside it, never inside it."""
    return path.with_name(path.name + DIGEST_SUFFIX)


def write_verified(path: Path, data: bytes) -> bool:
    """Write `data` to `path` and its sha256 to `digest_path(path)`, each atomically (the
    digest last: a writer killed in between leaves an entry without digest, a miss)."""
    digest = hashlib.sha256(data).hexdigest().encode("ascii")
    return write_atomically(path, lambda handle: handle.write(data)) and write_atomically(
        digest_path(path), lambda handle: handle.write(digest)
    )


def read_verified(path: Path) -> bytes | None:
    """The bytes of the cache file `path` when they match the digest kept beside them; None
    when the file or its digest is missing, the digest empty, or they differ (a miss)."""
    try:
        data = path.read_bytes()
        expected = digest_path(path).read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable cache file %s (%s)", path, exc)
        return None
    if not expected or hashlib.sha256(data).hexdigest() != expected:
        log.warning("ignoring corrupt cache file %s: its content does not match its digest", path)
        return None
    return data


def material_key(material: Any) -> str:
    """sha256 of a canonical JSON form of `material` (prompt, model, inputs, ...)."""
    canonical = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class JsonFileCache:
    """One JSON file per key under a directory, its sha256 kept beside it
    (`KEY.json.sha256`); atomic writes; a file without a matching digest is a miss.

    `directory` None means `{heta_eval cache}/{subdir}` ($HETA_EVAL_CACHE or
    ~/.cache/heta_eval), resolved on first use so that constructing it does no I/O. A cache
    that cannot be read or written logs a warning and behaves as empty.
    """

    def __init__(self, directory: str | os.PathLike[str] | None, subdir: str) -> None:
        self._setting = directory
        self._subdir = subdir
        self._path: Path | None = None

    @property
    def directory(self) -> Path:
        """Where the entries are (created on first use)."""
        if self._path is None:
            self._path = cache_directory(self._setting, self._subdir)
        return self._path

    def _file(self, key: str) -> Path | None:
        try:
            return self.directory / f"{key}.json"
        except OSError as exc:
            log.warning("cache %s unavailable (%s); not caching", self._subdir, exc)
            return None

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry stored under `key`, or None (missing or unreadable)."""
        path = self._file(key)
        if path is None:
            return None
        data = read_verified(path)
        if data is None:
            return None
        try:
            entry = json.loads(data.decode("utf-8"))
            if not isinstance(entry, dict):
                raise ValueError("not a JSON object")
            return entry
        except (OSError, ValueError) as exc:
            log.warning("ignoring corrupt cache file %s (%s)", path, exc)
            return None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store `entry` under `key` (temporary file + rename)."""
        path = self._file(key)
        if path is not None:
            write_verified(path, json.dumps(entry).encode("utf-8"))
