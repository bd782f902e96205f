"""The local object store keeps keys inside its root and writes atomically."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval.kb import LocalObjectStore, ObjectStore
from heta_eval.kb.store import InvalidKeyError, WrittenBytesStore


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


def test_symlinked_object_out_of_the_root_is_refused_on_read(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "store")
    store.put("raw/a.txt", b"a")  # the directory is now known to the store
    (tmp_path / "secret.txt").write_bytes(b"secret")
    (store.root / "raw" / "b.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(InvalidKeyError, match="escapes"):
        store.get("raw/b.txt")
    with pytest.raises(InvalidKeyError, match="escapes"):
        store.put("raw/b.txt", b"x")
    assert (tmp_path / "secret.txt").read_bytes() == b"secret"


def test_links_inside_the_root_and_other_store_instances_see_the_same_objects(
    tmp_path: Path,
) -> None:
    store = LocalObjectStore(tmp_path / "store")
    store.put("raw/d/one.txt", b"one")
    (store.root / "alias").symlink_to(store.root / "raw")
    other = LocalObjectStore(tmp_path / "store")
    assert other.get("alias/d/one.txt") == b"one"
    assert other.path_of("alias/d/one.txt") == store.path_of("raw/d/one.txt")
    other.put("alias/d/two.txt", b"two")
    assert store.get("raw/d/two.txt") == b"two"
    with pytest.raises(KeyError, match="no object"):
        other.get("raw/missing/x.txt")


def test_written_bytes_view_reads_memory_first_and_writes_through(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    store.put("raw/a.txt", b"a")
    store.put("raw/b.txt", b"b")
    view = WrittenBytesStore(store, {"raw/a.txt": b"a"})
    assert isinstance(view, ObjectStore)
    (tmp_path / "raw" / "a.txt").write_bytes(b"changed on disk")  # memory answers first
    assert view.get("raw/a.txt") == b"a"
    assert view.get("raw/b.txt") == b"b"
    view.put("raw/a.txt", b"new")
    assert view.get("raw/a.txt") == b"new" == store.get("raw/a.txt")
    assert view.exists("raw/b.txt") and not view.exists("raw/c.txt")
    assert list(view.list("raw/")) == ["raw/a.txt", "raw/b.txt"]
    with pytest.raises(KeyError, match="no object"):
        view.get("raw/c.txt")
