"""The import graph of heta_eval has no cycles, counting imports inside functions too.

An import moved into a function hides a cycle from the interpreter, not from the design:
dependencies point down (ARCHITECTURE.md), so every module-level and function-level import
between heta_eval modules is an edge here (imports under `if TYPE_CHECKING:` are not).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "heta_eval"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Dotted names imported anywhere in `tree`, except under `if TYPE_CHECKING:`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}".rstrip(".")
            # `from a.b import c`: the module a.b.c if there is one, else a.b (see owner()).
            yield from (f"{base}.{alias.name}" for alias in node.names)
        yield from _imports(node, module, is_package)


def _graph(depth: int | None = None) -> dict[str, set[str]]:
    """Edges between heta_eval modules, or between their prefixes of `depth` parts."""
    modules = _modules()

    def owner(name: str) -> str | None:
        """The module `name` is, or is in."""
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    def group(name: str) -> str:
        return ".".join(name.split(".")[:depth]) if depth else name

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = {owner(n) for n in _imports(tree, module, path.name == "__init__.py")}
        edges = graph.setdefault(group(module), set())
        edges.update(group(t) for t in targets if t and group(t) != group(module))
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a path, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_between_modules() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_no_import_cycle_between_packages() -> None:
    cycle = _cycle(_graph(depth=2))
    assert cycle is None, " -> ".join(cycle or [])


def test_kb_and_evaluators_share_endpoints_and_never_import_each_other() -> None:
    graph = _graph(depth=2)
    assert "heta_eval.evaluators" not in graph["heta_eval.kb"]
    assert "heta_eval.kb" not in graph["heta_eval.evaluators"]
    assert "heta_eval.endpoints" in graph["heta_eval.kb"] & graph["heta_eval.evaluators"]
    assert graph["heta_eval.endpoints"] <= {"heta_eval.records", "heta_eval.redaction"}


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every node `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_results_and_compare_sit_beside_run_and_never_import_it() -> None:
    graph = _graph(depth=2)
    for package in ("heta_eval.results", "heta_eval.compare"):
        assert "heta_eval.run" not in _reachable(graph, package), package
    assert "heta_eval.tracking" in graph["heta_eval.results"]  # the write side it reads back


# Dependencies point down (ARCHITECTURE.md): a package imports only packages of a lower
# layer, or those named beside it in SIDEWAYS.
LAYERS = {
    0: {
        "records",
        "protocols",
        "redaction",
        "files",
        "code_identity",
        "progress",
        "async_run",
        "json_cache",
        "lazy_exports",
    },
    1: {"config", "endpoints"},
    2: {"benchmarks", "kb", "evaluators", "tracking", "reporting", "bridges"},
    3: {"run", "results", "compare"},
    4: {"sweep"},
    5: {"cli"},
    6: {"__main__"},  # `python -m heta_eval`
}
SIDEWAYS = {
    ("benchmarks", "evaluators"),  # an adapter names its default evaluators
    ("bridges", "kb"),  # another engine's recipe behind our knowledge-base contract
    ("protocols", "records"),
    ("records", "files"),
    ("records", "redaction"),
    ("config", "redaction"),
    ("endpoints", "redaction"),
    ("json_cache", "files"),
}
# Imports of heta_eval modules inside functions: only for a heavy dependency that most runs
# never need, each with its reason.
FUNCTION_LEVEL = {
    ("heta_eval.reporting.figures", "heta_eval.reporting"): "matplotlib, when a figure is drawn",
}


def _layer(package: str) -> int:
    name = package.removeprefix("heta_eval").lstrip(".") or "heta_eval"
    if name == "heta_eval":
        return 0  # the root only re-exports, lazily (lazy_exports)
    return next(layer for layer, names in LAYERS.items() if name in names)


def test_dependencies_point_down() -> None:
    wrong = []
    for package, targets in _graph(depth=2).items():
        for target in targets:
            pair = (package.removeprefix("heta_eval."), target.removeprefix("heta_eval."))
            if target != "heta_eval" and _layer(target) >= _layer(package) and pair not in SIDEWAYS:
                wrong.append(f"{package} -> {target}")
    assert not wrong, wrong


def _function_level_imports() -> set[tuple[str, str]]:
    found = set()
    for module, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("heta_eval"):
                    found.add((module, node.module or ""))
                elif isinstance(node, ast.Import):
                    found |= {
                        (module, a.name) for a in node.names if a.name.startswith("heta_eval")
                    }
    return found


def test_heta_eval_modules_are_imported_at_module_level() -> None:
    assert _function_level_imports() == set(FUNCTION_LEVEL)
