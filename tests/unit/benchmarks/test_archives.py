"""Archive extraction refuses members that could escape, and extracts each archive once."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from heta_eval.benchmarks.archives import extract_archive
from heta_eval.benchmarks.download import sha256_file
from tests.archive_files import make_tar, make_zip, tar_member


def test_extract_zip(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", {"top/a.txt": b"alpha", "top/sub/b.txt": b"beta"})
    target = extract_archive(archive, tmp_path / "out")
    assert target == tmp_path / "out"
    assert (target / "top" / "a.txt").read_bytes() == b"alpha"
    assert (target / "top" / "sub" / "b.txt").read_bytes() == b"beta"
    assert (target / ".extracted-from").read_text().strip() == sha256_file(archive)
    assert not any(p.name.startswith(".out.tmp") for p in tmp_path.iterdir())


def test_extract_tar_gz(tmp_path: Path) -> None:
    archive = tmp_path / "a.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        for name, data in (("d/one.txt", b"one"), ("d/two/three.txt", b"three")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    target = extract_archive(archive, tmp_path / "out")
    assert (target / "d" / "one.txt").read_bytes() == b"one"
    assert (target / "d" / "two" / "three.txt").read_bytes() == b"three"


def test_second_extraction_is_skipped(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", {"a.txt": b"alpha", "b.txt": b"beta"})
    target = extract_archive(archive, tmp_path / "out")
    (target / "a.txt").unlink()  # a re-extraction would restore it
    assert extract_archive(archive, target) == target
    assert not (target / "a.txt").exists()

    # A different archive for the same target replaces the old extraction.
    other = make_zip(tmp_path / "b.zip", {"c.txt": b"gamma"})
    extract_archive(other, target)
    assert sorted(p.name for p in target.iterdir()) == [".extracted-from", "c.txt"]


def test_foreign_target_is_not_deleted(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", {"a.txt": b"alpha"})
    target = tmp_path / "out"
    target.mkdir()
    (target / "mine.txt").write_text("user data")
    with pytest.raises(FileExistsError):
        extract_archive(archive, target)
    assert (target / "mine.txt").read_text() == "user data"


@pytest.mark.parametrize("mode,suffix", [("w", ".tar"), ("w:bz2", ".tar.bz2"), ("w:xz", ".tar.xz")])
def test_other_tar_compressions(tmp_path: Path, mode: str, suffix: str) -> None:
    archive = make_tar(tmp_path / f"a{suffix}", [tar_member("x/file.txt")], mode)
    target = extract_archive(archive, tmp_path / "out")
    assert (target / "x" / "file.txt").read_bytes() == b"payload"
    assert sorted(os.listdir(target)) == [".extracted-from", "x"]
