"""Progress display: log lines in CI and logs, rich bars on a terminal, same results either way."""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path

import pytest
from rich.console import Console

from heta_eval.benchmarks.download import fetch_resource
from heta_eval.progress import ProgressReporter, current, use
from heta_eval.records import BenchmarkResource

from ..conftest import InProcessCli
from .runs import printed_report

ANSI = re.compile(r"\x1b\[")


def _progress_lines(output: str) -> list[str]:
    marker = "[heta_eval.progress]"
    return [line.split(" - ", 1)[1] for line in output.splitlines() if marker in line]


def test_cli_run_without_a_terminal_logs_one_line_per_stage_start_and_end(
    cli: InProcessCli,
) -> None:
    proc = cli("tracking=none")
    assert proc.returncode == 0, proc.stderr
    output = proc.stdout + proc.stderr
    assert not ANSI.search(output) and "\r" not in output
    lines = _progress_lines(output)
    ends = [line for line in lines if " in " in line and "/s)" in line]
    assert len(lines) == 2 * len(ends)  # every stage: one start line, one end line
    expected = {
        "documents: 36/36 documents",
        "corpus parse: 36/36 documents",
        "corpus chunk: 36/36 documents",
        "corpus index bm25: 36/36 chunks",
        "corpus query+score: 48/48 queries",
        "units: 1/1 units",
    }
    assert {line.split(" in ")[0] for line in ends} == expected
    assert "documents: 36 documents" in lines and "corpus query+score: 48 queries" in lines


@pytest.mark.slow  # two unit-worker processes start, each importing the package
def test_many_units_in_workers_report_units_done_and_results_do_not_change(
    cli: InProcessCli, tmp_path: Path
) -> None:
    lines_run = cli("benchmark=sample_units", "tracking=none", "runner.workers=2")
    assert lines_run.returncode == 0, lines_run.stderr
    lines = _progress_lines(lines_run.stdout + lines_run.stderr)
    # Units are reported as they complete; per-unit stages stay out of the log.
    assert "units: 4 units" in lines
    assert any(line.startswith("units: 4/4 units in ") for line in lines)
    assert not [line for line in lines if "parse" in line or "query+score" in line]

    quiet = cli(
        "benchmark=sample_units",
        "tracking=none",
        "runner.progress=off",
        "runner.resume=false",
        root=tmp_path / "quiet",
    )
    assert quiet.returncode == 0, quiet.stderr
    assert _progress_lines(quiet.stdout + quiet.stderr) == []
    assert (
        printed_report(quiet.stdout).score_summary == printed_report(lines_run.stdout).score_summary
    )


def test_cli_run_on_a_forced_terminal_draws_bars(
    cli: InProcessCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TTY_COMPATIBLE=1 is rich's documented switch for a terminal it cannot detect.
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    proc = cli("tracking=none")
    assert proc.returncode == 0, proc.stderr
    bars = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", proc.stderr)
    assert ANSI.search(proc.stderr) and "━━━━" in bars
    for text in ("documents", "36/36 documents", "48/48 queries", "1/1 units", "/s"):
        assert text in bars
    assert "[heta_eval.progress]" not in proc.stdout + proc.stderr


def test_bars_show_counts_and_drop_transient_stages() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120)
    reporter = ProgressReporter("auto", console=console)
    assert reporter.mode == "bars"
    with reporter.stage("units", 2, "units") as units:
        for unit in ("u1", "u2"):
            with reporter.scoped(unit, transient=True).stage("parse", 3, "documents") as stage:
                stage.advance(3)
            units.advance()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buffer.getvalue())
    final = plain.rsplit("\r", 1)[-1]
    assert "units" in final and "2/2 units" in final
    assert "u1 parse" in plain and "u1 parse" not in final  # removed once done


def test_lines_report_milestones_and_errors(caplog: pytest.LogCaptureFixture) -> None:
    reporter = ProgressReporter("lines", milestone_seconds=0)
    with caplog.at_level(logging.INFO, logger="heta_eval.progress"):
        with reporter.stage("queries", 20, "queries") as stage:
            for _ in range(20):
                stage.advance()
        with pytest.raises(RuntimeError), reporter.stage("build", 4, "documents") as stage:
            stage.advance()
            raise RuntimeError("boom")
        with reporter.scoped("u1", transient=True).stage("parse", 2) as stage:
            stage.advance(2)
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "queries: 20 queries"
    assert "queries: 2/20 queries (10%)" in messages[1] and "ETA" in messages[1]
    assert sum("(90%)" in m for m in messages) == 1
    assert messages[10].startswith("queries: 20/20 queries in ")
    assert messages[-1].startswith("build: 1/4 documents in ")
    assert messages[-1].endswith("stopped by an error")
    assert not [m for m in messages if "parse" in m]


def test_downloads_follow_the_run_reporter(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = tmp_path / "source.bin"
    source.write_bytes(b"x" * 5000)
    resource = BenchmarkResource(name="data.bin", uri=source.as_uri(), size_bytes=5000)
    with caplog.at_level(logging.INFO, logger="heta_eval"):
        with use(ProgressReporter("off")) as quiet:
            assert current() is quiet
            fetch_resource(resource, tmp_path / "a")
        assert not [r for r in caplog.records if r.name == "heta_eval.progress"]
        with use(ProgressReporter("lines")):
            fetch_resource(resource, tmp_path / "b")
    lines = [r.getMessage() for r in caplog.records if r.name == "heta_eval.progress"]
    assert lines[0] == "download data.bin: 5.0 kB"
    assert lines[1].startswith("download data.bin: 5.0 kB/5.0 kB in ")
