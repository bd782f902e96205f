"""Safe archive extraction: no member may write outside its target directory."""

from __future__ import annotations

import logging
import lzma
import os
import re
import shutil
import stat
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from heta_eval.benchmarks.download import exclusive_lock, sha256_file

logger = logging.getLogger(__name__)

EXTRACTED_MARKER = ".extracted-from"
_DRIVE = re.compile(r"^[A-Za-z]:")


class ArchiveError(ValueError):
    """An archive that cannot be extracted: not an archive, cut off, corrupt, or unsafe."""


class UnsafeArchiveError(ArchiveError):
    """An archive member could escape the extraction directory or is not a plain file/dir."""


def _check_member_name(archive: Path, name: str, base: Path) -> None:
    """Refuse a member name that is absolute, has a drive or `..`, or lands outside `base`."""
    if not name or "\x00" in name:
        raise UnsafeArchiveError(f"{archive}: member {name!r} has an invalid name")
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        raise UnsafeArchiveError(f"{archive}: member {name!r} has an absolute path")
    if ".." in re.split(r"[\\/]", name):
        raise UnsafeArchiveError(f"{archive}: member {name!r} has a '..' component")
    resolved = Path(os.path.normpath(base / PurePosixPath(name)))
    if not resolved.is_relative_to(base):
        raise UnsafeArchiveError(f"{archive}: member {name!r} would be written outside {base}")


def _check_zip(archive: Path, zf: zipfile.ZipFile, base: Path) -> None:
    """Check every member of a zip before anything is written."""
    for info in zf.infolist():
        _check_member_name(archive, info.filename, base)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise UnsafeArchiveError(f"{archive}: member {info.filename!r} is a symlink")
        if mode and (
            stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
        ):
            raise UnsafeArchiveError(f"{archive}: member {info.filename!r} is a special file")


def _check_tar(archive: Path, members: list[tarfile.TarInfo], base: Path) -> None:
    """Check every member of a tar before anything is written."""
    for member in members:
        _check_member_name(archive, member.name, base)
        if member.issym():
            raise UnsafeArchiveError(
                f"{archive}: member {member.name!r} is a symlink (to {member.linkname!r})"
            )
        if member.islnk():
            raise UnsafeArchiveError(
                f"{archive}: member {member.name!r} is a hard link (to {member.linkname!r})"
            )
        if not (member.isreg() or member.isdir()):
            raise UnsafeArchiveError(
                f"{archive}: member {member.name!r} is a device, fifo or other special file"
            )


def _extract_into(archive: Path, destination: Path) -> None:
    """Check all members of `archive`, then extract it into the new directory `destination`;
    ArchiveError (one line, the archive named) for one cut off or corrupt."""
    try:
        _extract_checked(archive, destination)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise ArchiveError(f"{archive}: a corrupt or cut-off archive ({exc})") from None
    except OSError as exc:
        if exc.errno is not None:  # a file system error, not the archive's
            raise
        raise ArchiveError(f"{archive}: a corrupt or cut-off archive ({exc})") from None


def _extract_checked(archive: Path, destination: Path) -> None:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            _check_zip(archive, zf, destination)
            destination.mkdir()
            zf.extractall(destination)
        return
    if not tarfile.is_tarfile(archive):
        raise ArchiveError(
            f"{archive}: not a supported archive (.zip, .tar, .tar.gz/.tgz, .tar.bz2, .tar.xz)"
        )
    with tarfile.open(archive, "r:*") as tf:
        members = tf.getmembers()
        _check_tar(archive, members, destination)
        destination.mkdir()
        if hasattr(tarfile, "data_filter"):
            tf.extractall(destination, members=members, filter="data")
        else:  # pragma: no cover - Python without extraction filters
            tf.extractall(destination, members=members)


def extract_archive(archive: Path, target: Path) -> Path:
    """Extract a .zip, .tar, .tar.gz/.tgz, .tar.bz2 or .tar.xz `archive` into `target`.

    Every member is checked before anything is written: absolute paths, drive letters, `..`
    components, paths resolving outside `target`, symlinks, hard links and special files
    raise UnsafeArchiveError naming the archive and the member. The archive is unpacked into
    a temporary sibling directory that is then renamed to `target`, together with a marker
    file `.extracted-from` holding the archive's sha256; when `target` already carries the
    marker for this archive, nothing is extracted again. A `target` left by an extraction of
    another archive (different marker) is replaced; an empty `target` is reused; a non-empty
    `target` without the marker raises FileExistsError rather than being deleted.
    """
    archive = Path(archive)
    target = Path(target).absolute()
    digest = sha256_file(archive)
    marker = target / EXTRACTED_MARKER
    if _marker_matches(marker, digest):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(target.parent / f".{target.name}.lock", str(archive)):
        if _marker_matches(marker, digest):
            return target
        if target.exists() and not marker.is_file():
            if target.is_dir() and not any(target.iterdir()):
                target.rmdir()
            else:
                raise FileExistsError(
                    f"cannot extract {archive}: {target} exists and was not extracted by "
                    f"heta-eval (no {EXTRACTED_MARKER} marker); remove it or choose another target"
                )
        tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        try:
            _extract_into(archive, tmp)
            (tmp / EXTRACTED_MARKER).write_text(digest + "\n", encoding="utf-8")
            old = None
            if target.exists():
                old = target.parent / f".{target.name}.old-{os.getpid()}"
                if old.exists():
                    shutil.rmtree(old)
                os.replace(target, old)
            os.replace(tmp, target)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    logger.info("extracted %s into %s", archive, target)
    return target


def _marker_matches(marker: Path, digest: str) -> bool:
    """Whether `marker` exists and records `digest`."""
    try:
        return marker.read_text(encoding="utf-8").strip() == digest
    except (FileNotFoundError, NotADirectoryError):
        return False
