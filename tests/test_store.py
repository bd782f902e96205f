"""The local object store keeps keys inside its root and writes atomically."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval.kb import LocalObjectStore, ObjectStore


def test_put_get_exists_list(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "store")
    assert isinstance(store, ObjectStore)
    store.put("raw/benchmarks/b/test/d1/d1.txt", b"one")
    store.put("raw/benchmarks/b/test/d2/d2.txt", b"two")
    store.put("other/x.bin", b"\x00")
    assert store.get("raw/benchmarks/b/test/d1/d1.txt") == b"one"
    assert store.exists("other/x.bin") and not store.exists("other/y.bin")
    assert list(store.list("raw/")) == [
        "raw/benchmarks/b/test/d1/d1.txt",
        "raw/benchmarks/b/test/d2/d2.txt",
    ]
    assert len(list(store.list())) == 3
    with pytest.raises(KeyError, match="no object"):
        store.get("raw/missing.txt")


def test_identical_put_keeps_the_file_and_a_change_replaces_it(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    store.put("a/b.txt", b"same")
    path = store.path_of("a/b.txt")
    before = path.stat().st_mtime_ns
    store.put("a/b.txt", b"same")
    assert path.stat().st_mtime_ns == before
    store.put("a/b.txt", b"different")
    assert store.get("a/b.txt") == b"different"
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
