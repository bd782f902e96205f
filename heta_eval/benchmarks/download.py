"""Verified downloads into a shared cache, for `prepare()`.

Benchmark adapters declare the files they need as `BenchmarkResource`s (name, URI, sha256,
size) and obtain them with `fetch_resource()`; archives are unpacked with
`heta_eval.benchmarks.archives.extract_archive()`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import http.client
import logging
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from heta_eval.json_cache import cache_dir
from heta_eval.progress import ProgressReporter, current
from heta_eval.records import BenchmarkResource

logger = logging.getLogger(__name__)

__all__ = [
    "ChecksumMismatchError",
    "DownloadError",
    "cache_dir",
    "fetch_resource",
    "sha256_file",
    "verify_file",
]

_CHUNK = 1 << 20
_USER_AGENT = "heta-eval (python-urllib)"
_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*$", re.IGNORECASE)


class DownloadError(RuntimeError):
    """A resource could not be obtained: network or HTTP failure, or offline mode."""


class ChecksumMismatchError(DownloadError):
    """A file's size or sha256 differs from what its `BenchmarkResource` declares."""


# --------------------------------------------------------------------------------------------
# Cache directory and verification
# --------------------------------------------------------------------------------------------


def sha256_file(path: Path, chunk_size: int = _CHUNK) -> str:
    """The sha256 hex digest of the file at `path`, read in chunks of `chunk_size` bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def verify_file(path: Path, resource: BenchmarkResource) -> None:
    """Raise ChecksumMismatchError when `path` differs from the declared size or sha256.

    Checks only what `resource` declares; a resource without size and checksum always passes.
    The size is checked first, so a wrong-sized file is rejected without hashing it.
    """
    _check(path, resource, path.stat().st_size, None)


def _check(path: Path, resource: BenchmarkResource, size: int, digest: str | None) -> str | None:
    """Compare `size` and `digest` (computed on demand) with `resource`; return the digest."""
    if resource.size_bytes is not None and size != resource.size_bytes:
        raise ChecksumMismatchError(
            f"{resource.name}: expected {resource.size_bytes} bytes, got {size} bytes "
            f"(file {path}, from {resource.uri})"
        )
    expected = resource.sha256
    if expected is None:
        return digest
    actual = digest if digest is not None else sha256_file(path)
    if actual != expected:
        raise ChecksumMismatchError(
            f"checksum mismatch for {resource.name}: expected sha256 {expected}, got {actual} "
            f"(file {path}, from {resource.uri})"
        )
    return actual


def _source_record(path: Path) -> Path:
    """Where the URI a downloaded (or partly downloaded) file came from is recorded."""
    return path.with_name(f".{path.name.lstrip('.')}.source")


def _recorded_source(path: Path) -> str | None:
    try:
        return _source_record(path).read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _record_source(path: Path, uri: str) -> None:
    _source_record(path).write_text(uri + "\n", encoding="utf-8")


def _verifies(
    path: Path, resource: BenchmarkResource, *, log: bool = True, offline: bool = False
) -> bool:
    """Whether `path` is a regular file that passes `verify_file`; logs why when it does not.

    A resource without a checksum cannot be verified by content: its file counts only when
    it was downloaded from the same URI (a file from another `base_url` is not this one);
    offline, a file put there by hand (no record of its source) counts too."""
    if not path.is_file():
        return False
    try:
        verify_file(path, resource)
    except ChecksumMismatchError as error:
        if log:
            logger.warning("existing file does not verify: %s", error)
        return False
    if resource.sha256 is None:
        source = _recorded_source(path)
        if source != resource.uri and not (offline and source is None):
            if log:
                logger.info(
                    "existing %s came from %s, not %s: downloading it again",
                    path,
                    source or "an unknown source",
                    resource.uri,
                )
            return False
    return True


# --------------------------------------------------------------------------------------------
# Download
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def exclusive_lock(lock_path: Path, what: str) -> Iterator[None]:
    """Hold an exclusive fcntl.flock on `lock_path` (created if missing) for the block."""
    with open(lock_path, "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.info("waiting for another process that is fetching %s (%s)", what, lock_path)
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def fetch_resource(
    resource: BenchmarkResource,
    directory: Path,
    *,
    offline: bool = False,
    timeout: float = 60.0,
    progress: bool | None = None,
    check: Callable[[Path], object] | None = None,
) -> Path:
    """Return `directory/resource.name` holding the verified file, downloading it if needed.

    An existing file that verifies is returned without any network access. Otherwise, unless
    `offline`, the URI (http, https or file) is streamed into `directory/.{name}.part`,
    resuming an earlier partial download with an HTTP Range request, then checked against the
    declared size and sha256 and moved into place atomically. A mismatch deletes the partial
    file and raises ChecksumMismatchError; network failures raise DownloadError and keep the
    partial file for the next attempt. An exclusive lock on `directory/.{name}.lock` keeps
    concurrent processes from downloading the same file at once.

    `check` (for example extracting an archive) is called with the downloaded file, still
    under its temporary name, once it verified; if it raises, the file is deleted and the
    error raised: a file that failed verification or `check` is never kept under its final
    name, so a later call (with a good URI) downloads it again. A resource without a
    checksum keeps a partial download only for the URI it came from.

    `progress`: show a progress bar (True), log one line at start and end (False), or follow
    the run's progress setting (None: `heta_eval.progress.current()`, which draws bars when
    stderr is a terminal and logs lines otherwise).
    """
    directory = Path(directory)
    final = directory / resource.name
    if _verifies(final, resource, offline=offline):
        return final
    if offline:
        state = "does not match its checksum" if final.exists() else "is missing"
        raise DownloadError(
            f"offline mode: resource {resource.name!r} ({final}) {state} and may not be "
            f"downloaded from {resource.uri}. Download it manually into {directory}, or point "
            "the benchmark at local files (e.g. benchmark.data_root=/path/to/data)."
        )
    directory.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(directory / f".{resource.name}.lock", resource.name):
        # Another process may have finished the download while we waited for the lock.
        if _verifies(final, resource, log=False):
            return final
        part = directory / f".{resource.name}.part"
        unverifiable = resource.sha256 is None  # only its URI says which file it is
        if unverifiable:
            if part.exists() and _recorded_source(part) != resource.uri:
                # Bytes from another URI (another base_url) are not the start of this file.
                part.unlink()
            _record_source(part, resource.uri)
        digest = _download(resource, part, timeout=timeout, progress=progress)
        try:
            digest = _check(part, resource, part.stat().st_size, digest)
            if check is not None:
                check(part)
        except BaseException:
            part.unlink(missing_ok=True)
            _source_record(part).unlink(missing_ok=True)
            raise
        if resource.sha256 is None:
            if digest is None:
                digest = sha256_file(part)
            logger.warning(
                "%s declares no checksum, so it was not verified; its sha256 is %s "
                '(pin it with checksum="sha256:%s")',
                resource.name,
                digest,
                digest,
            )
        os.replace(part, final)
        if unverifiable:
            # After the rename: a crash between the two leaves a file downloaded again.
            _record_source(final, resource.uri)
            _source_record(part).unlink(missing_ok=True)
        _fsync_directory(directory)
    return final


def _fsync_directory(directory: Path) -> None:
    """Make a rename in `directory` durable (best effort)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _open(uri: str, offset: int, timeout: float) -> Any:
    """urlopen `uri`, asking for bytes from `offset` on when it is positive."""
    headers = {"User-Agent": _USER_AGENT, "Accept-Encoding": "identity"}
    if offset > 0:
        headers["Range"] = f"bytes={offset}-"
    return urllib.request.urlopen(urllib.request.Request(uri, headers=headers), timeout=timeout)


def _download(
    resource: BenchmarkResource, part: Path, *, timeout: float, progress: bool | None
) -> str | None:
    """Stream `resource.uri` into `part`, resuming it; return the sha256 of the whole file.

    Returns None when the digest was not computed (the server reported the partial file
    complete with 416 and nothing was streamed; the caller hashes it if needed).
    """
    uri = resource.uri
    offset = part.stat().st_size if part.is_file() else 0
    if resource.size_bytes is not None and offset > resource.size_bytes:
        logger.info("partial file %s is larger than expected, starting over", part)
        offset = 0
    if offset and offset == resource.size_bytes:
        logger.info("partial file %s already has all %d bytes", part, offset)
        return None
    for _attempt in range(2):
        try:
            response = _open(uri, offset, timeout)
        except urllib.error.HTTPError as error:
            error.close()
            if error.code == 416 and offset > 0:
                logger.info("server reports %s complete (416), verifying it", part)
                return None
            raise DownloadError(
                f"download of {resource.name} from {uri} failed: HTTP {error.code} {error.reason}"
            ) from error
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as error:
            raise DownloadError(
                f"download of {resource.name} from {uri} failed: {_reason(error)}"
            ) from error
        with response:
            status = response.getcode()  # None for file:// URIs
            total: int | None = None  # the file's full size, as the server states it
            length = response.headers.get("Content-Length")
            if status == 206 and offset > 0:
                match = _CONTENT_RANGE.match(response.headers.get("Content-Range") or "")
                if match is None or int(match.group(1)) != offset:
                    logger.warning(
                        "server sent an unexpected Content-Range %r for %s, starting over",
                        response.headers.get("Content-Range"),
                        uri,
                    )
                    offset = 0
                    continue
                if match.group(3) != "*":
                    total = int(match.group(3))
            else:
                if offset > 0:
                    logger.info("server ignored the range request for %s, starting over", uri)
                offset = 0
                if length is not None and length.isdigit():
                    total = int(length)
            return _stream(resource, response, part, offset, total, progress)
    raise DownloadError(f"download of {resource.name} from {uri} failed: inconsistent ranges")


def _reason(error: BaseException) -> str:
    """A short human description of a network error."""
    if isinstance(error, urllib.error.URLError) and not isinstance(error.reason, str):
        error = error.reason if isinstance(error.reason, BaseException) else error
    if isinstance(error, TimeoutError):
        return "timed out"
    return str(error) or type(error).__name__


def _stream(
    resource: BenchmarkResource,
    response: IO[bytes],
    part: Path,
    offset: int,
    total: int | None,
    progress: bool | None,
) -> str:
    """Append the response body to `part` from `offset` on, hashing the whole file."""
    digest = hashlib.sha256()
    if offset:
        with open(part, "rb") as existing:
            remaining = offset
            while remaining and (chunk := existing.read(min(_CHUNK, remaining))):
                digest.update(chunk)
                remaining -= len(chunk)
    if offset:
        logger.info("resuming the download of %s at byte %d", resource.name, offset)
    bar_total = total if total is not None else resource.size_bytes
    reporter = current() if progress is None else ProgressReporter("bars" if progress else "lines")
    received = offset
    with (
        open(part, "r+b" if offset else "wb") as out,
        reporter.stage(
            f"download {resource.name}",
            None if bar_total is None else bar_total - offset,
            "bytes",
        ) as stage,
    ):
        out.seek(offset)
        out.truncate()
        try:
            while chunk := response.read(_CHUNK):
                out.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                stage.advance(len(chunk))
        except (OSError, http.client.HTTPException, ValueError) as error:
            raise DownloadError(
                f"download of {resource.name} from {resource.uri} interrupted after "
                f"{received} bytes: {_reason(error)}; run again to resume"
            ) from error
        finally:
            out.flush()
            os.fsync(out.fileno())
    if total is not None and received < total:
        raise DownloadError(
            f"download of {resource.name} from {resource.uri} interrupted: connection closed "
            f"after {received} of {total} bytes; run again to resume"
        )
    return digest.hexdigest()
