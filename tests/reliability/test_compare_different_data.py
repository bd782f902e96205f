"""`heta-eval-compare` never presents a change of data as a recipe's effect.

Two real `heta-eval` runs of the same recipe on a benchmark both labelled `jsonl/1/test`,
one with an edited document and an edited expected answer; then the real compare CLI (both
console scripts in this process).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import InProcessCli
from .conftest import jsonl_args, read_report, report_path, small_benchmark, write_jsonl


@pytest.mark.slow
def test_runs_on_different_data_are_refused_unless_allowed_and_then_flagged(
    cli: InProcessCli, tmp_path: Path
) -> None:
    original = tmp_path / "original"
    edited = tmp_path / "edited"
    reports = []
    for directory in (original, edited):
        directory.mkdir()
        docs, cases = small_benchmark(directory, cases=6)
        if directory is edited:
            rows = [json.loads(line) for line in docs.read_text().splitlines()]
            rows[0]["text"] = "Nothing here any more."
            write_jsonl(docs, rows)
            rows = [json.loads(line) for line in cases.read_text().splitlines()]
            rows[1]["answers"] = ["something else"]
            write_jsonl(cases, rows)
        done = cli(*jsonl_args(docs, cases), "tracking=none")
        assert done.returncode == 0, done.stderr
        reports.append(report_path(done.stdout))
    first, second = (read_report(p) for p in reports)
    assert first.benchmark.key == second.benchmark.key  # the same label, other data
    assert first.run.identity.data != second.run.identity.data  # type: ignore[union-attr]

    compare = "heta-eval-compare"
    refused = cli(*map(str, reports), "--out", str(tmp_path / "no"), program=compare)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "evaluated on different data" in refused.stderr
    assert "--allow-different-data" in refused.stderr
    assert not (tmp_path / "no").exists()

    out = tmp_path / "cmp"
    allowed = cli(*map(str, reports), "--allow-different-data", "--out", str(out), program=compare)
    assert allowed.returncode == 0, allowed.stderr
    notice = "evaluated on different data"
    assert notice in " ".join(allowed.stdout.split())
    assert notice in (out / "comparison.md").read_text()
    assert notice in (out / "comparison.html").read_text()
    data = json.loads((out / "comparison.json").read_text())
    assert data["different_data"] is True
    assert len({run["data_digest"] for run in data["runs"]}) == 2
