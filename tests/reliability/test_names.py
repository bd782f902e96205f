"""Names from data never choose where files go: document names with path separators or `..`,
object keys outside the store root and archive members outside the extraction directory are
all refused, and nothing is written outside."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from heta_eval.benchmarks.archives import UnsafeArchiveError, extract_archive
from heta_eval.kb import InvalidKeyError, LocalObjectStore

from ..archive_files import make_tar, make_zip, tar_member
from ..conftest import CliRunner
from .conftest import jsonl_args, nothing_written, write_jsonl


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "../../escape.txt"),
        ("name", "sub/dir.txt"),
        ("name", "..\\\\win.txt"),
        ("name", ".."),
        ("document_id", "../up"),
        ("document_id", "a/b"),
    ],
)
def test_document_names_that_are_paths_are_refused_with_file_and_line(
    run_cli: CliRunner, tmp_path: Path, field: str, value: str
) -> None:
    bad = {"document_id": "d2", "name": "d2.txt", "text": "two", field: value}
    docs = write_jsonl(tmp_path / "docs.jsonl", [{"document_id": "d1", "text": "one"}, bad])
    cases = write_jsonl(tmp_path / "cases.jsonl", [{"case_id": "q", "query": "one"}])
    proc = run_cli(*jsonl_args(docs, cases))
    assert proc.returncode == 1, proc.stderr
    assert f"{docs}:2: {field}: Value error, {field} must be a bare file name" in proc.stderr
    assert nothing_written(tmp_path / "outputs")
    assert not list(tmp_path.rglob("escape.txt")) and not list(tmp_path.rglob("up"))


@pytest.mark.parametrize(
    "key", ["../escape.txt", "/etc/passwd", "raw/../../x", "raw//x", "raw\\x", "", "raw/./x"]
)
def test_object_keys_that_escape_the_store_root_are_refused(tmp_path: Path, key: str) -> None:
    store = LocalObjectStore(tmp_path / "store")
    with pytest.raises(InvalidKeyError):
        store.put(key, b"x")
    assert not (tmp_path / "escape.txt").exists()


def test_object_keys_through_a_symlink_out_of_the_root_are_refused(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "store")
    (tmp_path / "outside").mkdir()
    (store.root / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(InvalidKeyError, match="escapes"):
        store.put("link/x.txt", b"x")


UNSAFE_ZIPS = {
    "parent": ({"ok.txt": b"fine", "../evil.txt": b"evil"}, None, "../evil.txt"),
    "absolute": ({"ok.txt": b"fine", "/tmp/evil": b"evil"}, None, "/tmp/evil"),
    "drive": ({"C:/evil.txt": b"evil"}, None, "C:/evil.txt"),
    "symlink": ({"ok.txt": b"fine"}, {"link": "/etc/passwd"}, "link"),
}


@pytest.mark.parametrize("case", sorted(UNSAFE_ZIPS))
def test_zip_members_that_escape_the_extraction_directory_are_refused(
    tmp_path: Path, case: str
) -> None:
    members, symlinks, bad = UNSAFE_ZIPS[case]
    archive = make_zip(tmp_path / "bad.zip", members, symlinks)
    workdir = tmp_path / "work"
    workdir.mkdir()
    with pytest.raises(UnsafeArchiveError) as info:
        extract_archive(archive, workdir / "out")
    assert bad in str(info.value)
    assert "bad.zip" in str(info.value)
    assert not (workdir / "out").exists()
    assert not (tmp_path / "evil.txt").exists()
    assert [p.name for p in workdir.iterdir() if not p.name.endswith(".lock")] == []


UNSAFE_TARS = {
    "parent": (tar_member("../evil.txt"), "../evil.txt"),
    "nested-parent": (tar_member("a/../../evil.txt"), "a/../../evil.txt"),
    "absolute": (tar_member("/tmp/evil"), "/tmp/evil"),
    "symlink": (tar_member("link", tarfile.SYMTYPE, "/etc/passwd"), "link"),
    "hardlink": (tar_member("hard", tarfile.LNKTYPE, "/etc/passwd"), "hard"),
    "fifo": (tar_member("pipe", tarfile.FIFOTYPE), "pipe"),
    "device": (tar_member("dev", tarfile.CHRTYPE), "dev"),
}


@pytest.mark.parametrize("case", sorted(UNSAFE_TARS))
def test_tar_members_that_escape_the_extraction_directory_are_refused(
    tmp_path: Path, case: str
) -> None:
    member, bad = UNSAFE_TARS[case]
    # The good member comes first: nothing may be written before every member is checked.
    archive = make_tar(tmp_path / "bad.tar.gz", [tar_member("ok.txt"), member])
    workdir = tmp_path / "work"
    workdir.mkdir()
    with pytest.raises(UnsafeArchiveError) as info:
        extract_archive(archive, workdir / "out")
    assert bad in str(info.value)
    assert "bad.tar.gz" in str(info.value)
    assert not (workdir / "out").exists()
    assert not (tmp_path / "evil.txt").exists()
    assert [p.name for p in workdir.iterdir() if not p.name.endswith(".lock")] == []
