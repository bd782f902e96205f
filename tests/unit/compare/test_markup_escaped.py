"""`comparison.md` keeps no raw HTML from ids, recipe names, metric names or query modes
(issue 23, item 20): they are escaped as the HTML page escapes them, so that a Markdown
viewer shows the text and runs none of it."""

from __future__ import annotations

from pathlib import Path

from heta_eval.compare import compare_reports, write_outputs
from tests.compare_helpers import modes_report

SCRIPT = "<script>alert(1)</script>"
IMAGE = "<img src=x onerror=alert(2)>"


def test_markup_in_names_and_ids_is_escaped_in_every_output(tmp_path: Path) -> None:
    ids = [f"c{i}" for i in range(8)]
    values = {f"hit{IMAGE}": [1, 0, 1, 1, 0, 1, 0, 1]}
    reports = [
        modes_report(f"base{SCRIPT}", {"bm25": values}, ids),
        # One case only in the other run: listed, by id, as left out.
        modes_report(f"other{SCRIPT}", {f"m{IMAGE}": values}, [*ids[:7], f"x{IMAGE}"]),
    ]
    comparison = compare_reports(reports, resamples=200)
    paths = write_outputs(comparison, tmp_path / "out")
    markdown = paths["markdown"].read_text()
    assert "<script" not in markdown and "<img" not in markdown, markdown
    assert f"base{SCRIPT}".replace("<", "&lt;").replace(">", "&gt;") in markdown
    assert "x&lt;img src=x onerror=alert(2)&gt;" in markdown  # the left-out case, by id
    page = paths["html"].read_text()
    assert "<script>alert" not in page and "<img src=x" not in page
