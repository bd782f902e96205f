"""What a run prints at its end: scores with CIs and counts, cache use, where to look; a
second evaluation from the caches and a reused run say so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ...conftest import InProcessCli
from ..conftest import SharedRun
from ..runs import report_path


def test_summary_shows_scores_cache_use_run_directory_and_mlflow_run(
    sample_run: SharedRun,
) -> None:
    out = sample_run.cli.stdout
    header = next(line for line in out.splitlines() if "query mode" in line)
    for column in ("metric", "mean", "95% CI", "scored", "skipped", "failed"):
        assert column in header
    row = next(line for line in out.splitlines() if "evidence_recall@5" in line)
    assert re.search(r"bm25 .* 0\.\d{4} .* \[0\.\d{3}, 1\.000\] .* 48 .* 0 .* 0", row)
    assert re.search(r"1 knowledge base\(s\): 1 built in \d+\.\d\d s\n", out)
    assert (
        "cache (readwrite): knowledge bases 0 hit(s), 1 miss(es), 1 written"
        " · responses 0 hit(s), 48 miss(es)" in out
    )
    run_dir = Path(next(x for x in out.splitlines() if x.startswith("run directory: "))[15:])
    assert (run_dir / "report.json").is_file()
    assert f"html report: {run_dir}/report.html" in out and (run_dir / "report.html").is_file()
    root = sample_run.root
    tracking = next(x for x in out.splitlines() if x.startswith("tracking: "))
    assert f"mlflow ui --backend-store-uri sqlite:///{root / 'mlflow.db'}" in tracking
    assert sample_run.tracked is not None and sample_run.tracked.info.run_id in tracking


@pytest.mark.slow
def test_runs_from_the_caches_and_reused_runs_say_so(
    cli: InProcessCli, sample_run: SharedRun
) -> None:
    # The sample run's configuration again, evaluated anew from its caches.
    again = cli("runner.progress=off", "runner.resume=false", "tracking=none", root=sample_run.root)
    assert again.returncode == 0, again.stderr
    # Loaded, not built: the build cache's load time, never "built in" (here, in report.html).
    loaded = re.search(
        r"1 knowledge base\(s\): 1 loaded from the build cache in \d+\.\d\d s\n", again.stdout
    )
    assert loaded, again.stdout
    html = report_path(again.stdout).with_name("report.html").read_text(encoding="utf-8")
    header = re.search(r"<h2>Knowledge bases \(([^<]*)\)</h2>", html)
    assert header and re.fullmatch(r"1: 1 loaded from the build cache in \d+\.\d\d s", header[1])
    assert (
        "cache (readwrite): knowledge bases 1 hit(s), 0 miss(es), 0 written"
        " · responses 48 hit(s), 0 miss(es)" in again.stdout
    )
    assert "tracking: tracking disabled" in again.stdout

    # The first configuration again: reused, and said so; no build or cache counts of the
    # old run presented as this one's.
    reused = cli("runner.progress=off", root=sample_run.root)
    assert reused.returncode == 0, reused.stderr
    assert "48 case results (0 failed) · nothing evaluated now" in reused.stdout
    assert "reused the result evaluated on " in reused.stdout
    assert "): same configuration, data and code" in reused.stdout
    assert "knowledge base(s)" not in reused.stdout and "cache (" not in reused.stdout
