"""A disk that fills up while a run writes: the CLI says which file could not be written and
why, and what was finished before stays valid (other reports, the journal's finished lines,
build cache entries), so that a rerun completes. The full disk is a file size limit
(RLIMIT_FSIZE, with SIGXFSZ ignored so that writes fail with EFBIG) set in the child."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from heta_eval.run.journal import CaseJournal

from ..conftest import CliRunner, user_env
from .conftest import jsonl_args, read_report, report_path, write_jsonl

# Runs `python -m heta_eval ARGS` with every file it writes limited to LIMIT bytes.
LIMITED = (
    "import resource, runpy, signal, sys\n"
    "limit = int(sys.argv.pop(1))\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))\n"
    "sys.argv[0] = 'heta_eval'\n"
    "runpy.run_module('heta_eval', run_name='__main__', alter_sys=True)\n"
)
ARGS = ("tracking=none", "recipe.chunk_size=32")


def _limited(tmp_path: Path, limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = user_env()
    env["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    return subprocess.run(
        [sys.executable, "-c", LIMITED, str(limit), f"paths.root={tmp_path / 'outputs'}", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _first_run(run_cli: CliRunner) -> tuple[Path, bytes, Path]:
    proc = run_cli(*ARGS)
    assert proc.returncode == 0, proc.stderr
    report = report_path(proc.stdout)
    (journal,) = report.parents[3].glob("state/*/journal.jsonl")
    return report, report.read_bytes(), journal


@pytest.mark.slow
def test_a_full_disk_while_journaling_names_the_journal_and_a_rerun_resumes(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    report, before, journal = _first_run(run_cli)
    limit = journal.stat().st_size // 2
    proc = _limited(tmp_path, limit, *ARGS, "runner.resume=false")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"heta-eval: cannot write {journal}: File too large" in proc.stderr
    assert report.read_bytes() == before  # the earlier report is untouched
    identity = json.loads(journal.read_bytes().split(b"\n", 1)[0])["identity"]
    finished, _ = CaseJournal(journal, identity).read()
    assert 0 < len(finished) < 48  # every line written before the disk filled is readable

    again = run_cli(*ARGS)
    assert again.returncode == 0, again.stderr
    resumed = read_report(report_path(again.stdout))
    assert resumed.run.resumed_cases == len(finished)
    assert len(resumed.case_results) == 48 and not resumed.failed_cases
    assert resumed.knowledge_base_manifests[0].cache_status == "hit"  # cache entry still valid
    assert resumed.score_summary == read_report(report).score_summary


@pytest.mark.slow
def test_a_full_disk_while_writing_the_report_keeps_the_journal_and_no_partial_file(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    report, before, journal = _first_run(run_cli)
    assert journal.stat().st_size < report.stat().st_size
    limit = (journal.stat().st_size + report.stat().st_size) // 2
    proc = _limited(tmp_path, limit, *ARGS, "runner.resume=false")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    line = next(x for x in proc.stderr.splitlines() if x.startswith("heta-eval: cannot write"))
    failed = Path(line.removeprefix("heta-eval: cannot write ").split(":")[0])
    assert failed.name == "report.json" and failed != report
    assert "File too large (disk full or file size limit)" in line
    assert not failed.exists() and not list(failed.parent.glob(".report.json*"))
    assert report.read_bytes() == before

    again = run_cli(*ARGS)
    assert again.returncode == 0, again.stderr
    resumed = read_report(report_path(again.stdout))
    assert resumed.run.resumed_cases == 48
    assert resumed.score_summary == read_report(report).score_summary


def test_a_full_disk_while_storing_documents_stops_the_run_naming_the_object(
    tmp_path: Path,
) -> None:
    big = {"document_id": "big", "text": "kelp forest " * 20_000}  # 240 kB
    docs = write_jsonl(tmp_path / "docs.jsonl", [{"document_id": "a", "text": "alpha"}, big])
    cases = write_jsonl(tmp_path / "cases.jsonl", [{"case_id": "q", "query": "kelp"}])
    proc = _limited(tmp_path, 100_000, *jsonl_args(docs, cases), "tracking=none")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    target = tmp_path / "outputs" / "store" / "raw" / "benchmarks" / "jsonl" / "test" / "big"
    assert f"heta-eval: cannot write {target / 'big.txt'}: File too large" in proc.stderr
    assert not target.exists() or not list(target.iterdir())  # no partial object
    assert not list((tmp_path / "outputs").rglob("report.json"))
