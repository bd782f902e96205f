"""Zip and tar archives built member by member (symlinks, unsafe names), for the tests of
archive extraction."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path


def make_zip(path: Path, members: dict[str, bytes], symlinks: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, link_target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, link_target)
    return path


def make_tar(path: Path, members: list[tarfile.TarInfo], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tf:
        for info in members:
            data = b"payload" if info.isreg() else None
            if data is not None:
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def tar_member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info
