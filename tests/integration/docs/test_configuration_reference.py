"""The configuration reference (docs/configuration.md) names every option of conf/ with its
default: a new option fails the suite until it is documented there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ...conftest import REPO

CONFIGURATION_DOC = REPO / "docs" / "configuration.md"
DOC = "docs/configuration.md"

_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]*?)\s*\|", re.MULTILINE)


def _section(text: str, heading: str, level: int) -> str:
    """The text under the first heading of `level` that contains `heading`."""
    marks = "#" * level
    pattern = re.compile(rf"^{marks} [^\n]*{re.escape(heading)}[^\n]*$", re.MULTILINE)
    match = pattern.search(text)
    assert match, f"docs/configuration.md has no {marks} heading with {heading!r}"
    end = re.compile(rf"^#{{1,{level}}} ", re.MULTILINE).search(text, match.end())
    return text[match.end() : end.start() if end else len(text)]


def _rows(text: str) -> dict[str, str]:
    """Table rows `| `name` | default | ...` as {name: default cell}."""
    return {m.group(1): m.group(2) for m in _ROW.finditer(text)}


def _default(cell: str) -> object:
    assert cell.startswith("`") and cell.endswith("`"), f"default {cell!r} is not in backticks"
    return yaml.safe_load(cell.strip("`"))


def _keys(path: Path) -> dict[str, object]:
    data = yaml.safe_load(path.read_text())
    return {k: v for k, v in data.items() if k not in ("_target_", "defaults")}


@pytest.fixture(scope="module")
def configuration() -> str:
    return _section(CONFIGURATION_DOC.read_text(encoding="utf-8"), "Configuration", 1)


@pytest.mark.parametrize(
    ("heading", "path"),
    [("`runner`", "runner/default.yaml"), ("`tracking`", "tracking/mlflow.yaml")],
)
def test_the_readme_documents_every_option_with_its_default(
    configuration: str, heading: str, path: str
) -> None:
    rows = _rows(_section(configuration, heading, 2))
    for key, value in _keys(REPO / "conf" / path).items():
        assert key in rows, f"{DOC}: the {heading} table has no row for `{key}` ({path})"
        assert _default(rows[key]) == value, f"{DOC}: `{key}` default differs from {path}"


@pytest.mark.parametrize("path", sorted((REPO / "conf" / "benchmark").glob("*.yaml")), ids=str)
def test_the_readme_documents_every_benchmark_option(configuration: str, path: Path) -> None:
    rows = _rows(_section(_section(configuration, "`benchmark`", 2), f"`{path.stem}`", 3))
    for key, value in _keys(path).items():
        assert key in rows, f"{DOC}: benchmark `{path.stem}` has no row for `{key}`"
        assert _default(rows[key]) == value, f"{DOC}: `{key}` default differs from {path.name}"


def test_the_readme_documents_every_recipe_key(configuration: str) -> None:
    rows = _rows(_section(configuration, "`recipe`", 2))
    keys = {k for p in (REPO / "conf" / "recipe").glob("*.yaml") for k in _keys(p)}
    missing = sorted(keys - set(rows))
    assert not missing, f"{DOC}: the `recipe` table lacks {missing}"


def test_the_readme_documents_the_evaluator_group_and_top_level_keys(configuration: str) -> None:
    rows = _rows(_section(configuration, "`evaluator`", 2))
    for path in (REPO / "conf" / "evaluator").glob("*.yaml"):
        assert set(_keys(path)) <= set(rows), f"{DOC}: the `evaluator` table lacks keys of {path}"
    top = _rows(_section(configuration, "`paths`", 2))
    assert {"paths.root", "optimized_metric"} <= set(top)
