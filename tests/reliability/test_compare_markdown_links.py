"""A Markdown link in a name survived into `comparison.md` (issue 36, item 15): a recipe named
`[click](javascript:alert(1))` became a link a Markdown viewer follows. Link syntax from
names and ids is escaped (`]\\(`), so the text shows and no link is made."""

from __future__ import annotations

import re
from pathlib import Path

from heta_eval.compare import compare_reports, write_outputs
from tests.compare_helpers import modes_report

LINK = "[click](javascript:alert(1))"


def test_a_javascript_link_in_a_name_is_no_link_in_comparison_md(tmp_path: Path) -> None:
    ids = [f"c{i}" for i in range(8)]
    values = {"hit": [1, 0, 1, 1, 0, 1, 0, 1]}
    reports = [
        modes_report(f"base{LINK}", {"bm25": values}, ids),
        modes_report("other", {f"m{LINK}": values}, ids),
    ]
    paths = write_outputs(compare_reports(reports, resamples=200), tmp_path / "out")
    markdown = paths["markdown"].read_text()
    assert "javascript:" in markdown  # the text is shown...
    assert not re.search(r"\]\(javascript:", markdown), markdown  # ...but is no link
    assert "[click]\\(javascript:alert(1))" in markdown
