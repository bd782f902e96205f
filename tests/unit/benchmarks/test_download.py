"""Verified downloads against a real local HTTP server: resumed, checked, locked, offline."""

from __future__ import annotations

import fcntl
import hashlib
import logging
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from heta_eval.benchmarks.download import (
    ChecksumMismatchError,
    DownloadError,
    cache_dir,
    fetch_resource,
    sha256_file,
    verify_file,
)
from heta_eval.records import BenchmarkResource
from tests.http_fixtures import FileServer, serve_files

PAYLOAD = random.Random(1234).randbytes(3 * 1024 * 1024)
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()
OTHER_SHA = hashlib.sha256(b"something else").hexdigest()


@pytest.fixture
def server() -> Iterator[FileServer]:
    with serve_files({"/data.bin": PAYLOAD}) as state:
        yield state


def resource(
    url: str, *, sha: str | None = PAYLOAD_SHA, size: int | None = len(PAYLOAD)
) -> BenchmarkResource:
    return BenchmarkResource(
        name="data.bin",
        uri=url,
        checksum=f"sha256:{sha}" if sha else None,
        size_bytes=size,
    )


def leftovers(directory: Path) -> list[str]:
    """Files in `directory` other than the lock file."""
    return sorted(p.name for p in directory.iterdir() if not p.name.endswith(".lock"))


# --------------------------------------------------------------------------------------------
# fetch_resource
# --------------------------------------------------------------------------------------------


def test_fresh_download_verifies_and_second_call_is_offline(
    server: FileServer, tmp_path: Path
) -> None:
    res = resource(server.url("/data.bin"))
    path = fetch_resource(res, tmp_path, progress=False)
    assert path == tmp_path / "data.bin"
    assert path.read_bytes() == PAYLOAD
    assert leftovers(tmp_path) == ["data.bin"]
    assert server.range_headers == [None]

    assert fetch_resource(res, tmp_path, progress=False) == path
    assert len(server.requests) == 1


def test_interrupted_download_resumes_with_range(server: FileServer, tmp_path: Path) -> None:
    res = resource(server.url("/data.bin"))
    server.cut_after = 1_000_000
    with pytest.raises(DownloadError, match="interrupted") as info:
        fetch_resource(res, tmp_path, progress=False)
    assert server.url("/data.bin") in str(info.value)
    part = tmp_path / ".data.bin.part"
    assert part.stat().st_size == 1_000_000
    assert not (tmp_path / "data.bin").exists()

    server.cut_after = None
    path = fetch_resource(res, tmp_path, progress=False)
    assert server.range_headers == [None, "bytes=1000000-"]
    assert path.read_bytes() == PAYLOAD
    assert not part.exists()


def test_server_ignoring_range_restarts_from_zero(server: FileServer, tmp_path: Path) -> None:
    (tmp_path / ".data.bin.part").write_bytes(b"garbage that is not the start of the file")
    server.ignore_range = True
    path = fetch_resource(resource(server.url("/data.bin")), tmp_path, progress=False)
    assert server.range_headers == ["bytes=41-"]
    assert path.read_bytes() == PAYLOAD


def test_complete_part_answered_416_is_verified(server: FileServer, tmp_path: Path) -> None:
    # Without a declared size the downloader cannot tell the .part is complete; the server's
    # 416 (range not satisfiable) tells it, and the file is verified without a new body.
    (tmp_path / ".data.bin.part").write_bytes(PAYLOAD)
    path = fetch_resource(resource(server.url("/data.bin"), size=None), tmp_path, progress=False)
    assert server.range_headers == [f"bytes={len(PAYLOAD)}-"]
    assert path.read_bytes() == PAYLOAD


def test_checksum_mismatch_leaves_nothing(server: FileServer, tmp_path: Path) -> None:
    with pytest.raises(ChecksumMismatchError) as info:
        fetch_resource(resource(server.url("/data.bin"), sha=OTHER_SHA), tmp_path, progress=False)
    message = str(info.value)
    assert "data.bin" in message
    assert OTHER_SHA in message
    assert PAYLOAD_SHA in message
    assert leftovers(tmp_path) == []


def test_size_mismatch_leaves_nothing(server: FileServer, tmp_path: Path) -> None:
    res = resource(server.url("/data.bin"), size=len(PAYLOAD) + 1)
    with pytest.raises(ChecksumMismatchError) as info:
        fetch_resource(res, tmp_path, progress=False)
    message = str(info.value)
    assert "data.bin" in message
    assert str(len(PAYLOAD) + 1) in message
    assert str(len(PAYLOAD)) in message
    assert leftovers(tmp_path) == []


def test_existing_corrupt_file_is_replaced(server: FileServer, tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(b"x" * len(PAYLOAD))
    path = fetch_resource(resource(server.url("/data.bin")), tmp_path, progress=False)
    assert path.read_bytes() == PAYLOAD
    assert len(server.requests) == 1


def test_offline(server: FileServer, tmp_path: Path) -> None:
    res = resource(server.url("/data.bin"))
    with pytest.raises(DownloadError) as info:
        fetch_resource(res, tmp_path / "cache", offline=True)
    assert res.uri in str(info.value)
    assert "data_root" in str(info.value)
    assert not (tmp_path / "cache").exists()
    assert server.requests == []

    local = tmp_path / "local"
    local.mkdir()
    (local / "data.bin").write_bytes(PAYLOAD)
    assert fetch_resource(res, local, offline=True) == local / "data.bin"
    assert server.requests == []


def test_no_checksum_logs_sha256(
    server: FileServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    res = resource(server.url("/data.bin"), sha=None, size=None)
    with caplog.at_level(logging.WARNING, logger="heta_eval.benchmarks.download"):
        path = fetch_resource(res, tmp_path, progress=False)
    assert path.read_bytes() == PAYLOAD
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert PAYLOAD_SHA in warnings[0].getMessage()


def test_file_uri(tmp_path: Path) -> None:
    source = tmp_path / "source.bin"
    source.write_bytes(PAYLOAD)
    path = fetch_resource(resource(source.as_uri()), tmp_path / "cache", progress=False)
    assert path.read_bytes() == PAYLOAD


def test_http_error_names_uri_and_status(server: FileServer, tmp_path: Path) -> None:
    url = server.url("/missing.bin")
    with pytest.raises(DownloadError) as info:
        fetch_resource(resource(url), tmp_path, progress=False)
    assert url in str(info.value)
    assert "404" in str(info.value)


def test_timeout_is_a_download_error(server: FileServer, tmp_path: Path) -> None:
    server.stall = threading.Event()
    url = server.url("/data.bin")
    with pytest.raises(DownloadError, match="timed out") as info:
        fetch_resource(resource(url), tmp_path, timeout=0.2, progress=False)
    assert url in str(info.value)
    server.stall.set()


def test_progress_bar(server: FileServer, tmp_path: Path) -> None:
    path = fetch_resource(resource(server.url("/data.bin")), tmp_path, progress=True)
    assert path.read_bytes() == PAYLOAD


def test_waits_for_lock_and_rechecks(server: FileServer, tmp_path: Path) -> None:
    # Another "process" holds the lock and finishes the file: the waiting fetch must not
    # download anything once it gets the lock.
    res = resource(server.url("/data.bin"))
    results: list[Path] = []
    with open(tmp_path / ".data.bin.lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        worker = threading.Thread(
            target=lambda: results.append(fetch_resource(res, tmp_path, progress=False))
        )
        worker.start()
        time.sleep(0.1)
        assert server.requests == []
        (tmp_path / "data.bin").write_bytes(PAYLOAD)
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    worker.join(timeout=10)
    assert results == [tmp_path / "data.bin"]
    assert server.requests == []


def test_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HETA_EVAL_CACHE", str(tmp_path / "env-cache"))
    assert cache_dir() == tmp_path / "env-cache"
    assert (tmp_path / "env-cache").is_dir()
    assert cache_dir(tmp_path / "explicit") == tmp_path / "explicit"
    monkeypatch.chdir(tmp_path)
    assert cache_dir("relative") == tmp_path / "relative"
    monkeypatch.delenv("HETA_EVAL_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "heta_eval"


def test_sha256_and_verify_file(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(PAYLOAD)
    assert sha256_file(path, chunk_size=4096) == PAYLOAD_SHA
    verify_file(path, resource("http://x/data.bin"))
    verify_file(path, resource("http://x/data.bin", sha=None, size=None))
    with pytest.raises(ChecksumMismatchError, match=OTHER_SHA):
        verify_file(path, resource("http://x/data.bin", sha=OTHER_SHA))
