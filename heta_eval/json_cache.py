"""Where heta_eval's caches live, and a small on-disk cache of JSON entries keyed by the
sha256 of what produced them.

During a run (`run_cache`, entered by the runner around each unit) every cache of a
component that names no directory of its own (LLM answers, judge verdicts, embeddings) lives
under the run's cache root (`runner.cache_dir`), and every cache obeys the run's
`runner.cache` mode: `off` neither reads nor writes, `read` only reads, `write` only writes.
Outside a run the shared cache is used: `$HETA_EVAL_CACHE`, else ~/.cache/heta_eval.
Downloads of official benchmark files always use the shared cache (`cache_dir`): they are
verified by checksum and are the benchmark's data, which a run's identity digests.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from heta_eval.files import file_mode

log = logging.getLogger(__name__)

CACHE_ENV_VAR = "HETA_EVAL_CACHE"
"""The environment variable naming the shared heta_eval cache (default ~/.cache/heta_eval)."""


def cache_dir(configured: str | os.PathLike[str] | None = None) -> Path:
    """The shared cache: `configured`, else `$HETA_EVAL_CACHE`, else ~/.cache/heta_eval.

    Downloads live under it, and the other caches when no run is active (`run_cache`). The
    directory is created if missing and returned as an absolute path.
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


@dataclass(frozen=True)
class RunCache:
    """The caches of the running evaluation: their root and the `runner.cache` mode."""

    root: Path
    mode: str = "readwrite"

    @property
    def reads(self) -> bool:
        return self.mode in ("read", "readwrite")

    @property
    def writes(self) -> bool:
        return self.mode in ("write", "readwrite")


_RUN_CACHE: ContextVar[RunCache | None] = ContextVar("heta_eval_run_cache", default=None)


@contextlib.contextmanager
def run_cache(root: str | os.PathLike[str], mode: str = "readwrite") -> Iterator[RunCache]:
    """Within the block (and the tasks and threads it starts), caches live under `root` and
    obey `mode` (see the module docstring)."""
    token = _RUN_CACHE.set(RunCache(Path(root).expanduser().resolve(), mode))
    try:
        yield _RUN_CACHE.get()  # type: ignore[misc]
    finally:
        _RUN_CACHE.reset(token)


def cache_reads() -> bool:
    """Whether caches may be read now (always, outside a run)."""
    current = _RUN_CACHE.get()
    return current is None or current.reads


def cache_writes() -> bool:
    """Whether caches may be written now (always, outside a run)."""
    current = _RUN_CACHE.get()
    return current is None or current.writes


def cache_directory(setting: str | os.PathLike[str] | None, subdir: str) -> Path:
    """`setting`, or `{cache root}/{subdir}` when it is None or empty (the run's cache root
    during a run, else the shared cache); created."""
    current = _RUN_CACHE.get()
    if setting is not None and str(setting):
        path = Path(setting).expanduser().resolve()
    elif current is not None:
        path = current.root / subdir
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

    `directory` None means `{cache root}/{subdir}`: the run's cache root during a run, else
    $HETA_EVAL_CACHE or ~/.cache/heta_eval; resolved at use, so that constructing it does no
    I/O. During a run, reads and writes follow `runner.cache`. A cache that cannot be read
    or written logs a warning and behaves as empty.
    """

    def __init__(self, directory: str | os.PathLike[str] | None, subdir: str) -> None:
        self._setting = directory
        self._subdir = subdir

    @property
    def directory(self) -> Path:
        """Where the entries are now (created on use)."""
        return cache_directory(self._setting, self._subdir)

    def _file(self, key: str) -> Path | None:
        try:
            return self.directory / f"{key}.json"
        except OSError as exc:
            log.warning("cache %s unavailable (%s); not caching", self._subdir, exc)
            return None

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry stored under `key`, or None (missing, unreadable, or reading is off)."""
        if not cache_reads():
            return None
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
        """Store `entry` under `key` (temporary file + rename), unless writing is off."""
        if not cache_writes():
            return
        path = self._file(key)
        if path is not None:
            write_verified(path, json.dumps(entry).encode("utf-8"))
