"""A disk that fills up while a run writes: the CLI says which file could not be written and
why, and what was finished before stays valid (other reports, the journal's finished lines,
build cache entries), so that a rerun completes. The full disk is a file size limit
(RLIMIT_FSIZE, with SIGXFSZ ignored so that writes fail with EFBIG) set in a child process
(`processes.run_limited`): in this process it would limit pytest's own files too. The runs
around it are in this process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heta_eval.run.journal import CaseJournal

from ..conftest import InProcessCli
from .conftest import jsonl_args, read_report, report_path, write_jsonl
from .processes import run_limited

ARGS = ("tracking=none", "recipe.chunk_size=32")


def first_run(cli: InProcessCli) -> tuple[Path, bytes, Path]:
    """A finished run of ARGS: its report, the report's bytes and the run's journal."""
    done = cli(*ARGS)
    assert done.returncode == 0, done.stderr
    report = report_path(done.stdout)
    (journal,) = report.parents[3].glob("state/*/journal.jsonl")
    return report, report.read_bytes(), journal


# A process: the file size limit (RLIMIT_FSIZE) would hit pytest itself.
@pytest.mark.slow
def test_a_full_disk_while_journaling_names_the_journal_and_a_rerun_resumes(
    cli: InProcessCli, tmp_path: Path
) -> None:
    report, before, journal = first_run(cli)
    limit = journal.stat().st_size // 2
    done = run_limited(tmp_path / "outputs", tmp_path, limit, *ARGS, "runner.resume=false")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"heta-eval: cannot write {journal}: File too large" in done.stderr
    assert report.read_bytes() == before  # the earlier report is untouched
    identity = json.loads(journal.read_bytes().split(b"\n", 1)[0])["identity"]
    finished, _ = CaseJournal(journal, identity).read()
    assert 0 < len(finished) < 48  # every line written before the disk filled is readable

    again = cli(*ARGS)
    assert again.returncode == 0, again.stderr
    resumed = read_report(report_path(again.stdout))
    assert resumed.run.resumed_cases == len(finished)
    assert len(resumed.case_results) == 48 and not resumed.failed_cases
    assert resumed.knowledge_base_manifests[0].cache_status == "hit"  # cache entry still valid
    assert resumed.score_summary == read_report(report).score_summary


# A process: the file size limit (RLIMIT_FSIZE) would hit pytest itself.
@pytest.mark.slow
def test_a_full_disk_while_writing_the_report_keeps_the_journal_and_no_partial_file(
    cli: InProcessCli, tmp_path: Path
) -> None:
    report, before, journal = first_run(cli)
    assert journal.stat().st_size < report.stat().st_size
    limit = (journal.stat().st_size + report.stat().st_size) // 2
    done = run_limited(tmp_path / "outputs", tmp_path, limit, *ARGS, "runner.resume=false")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("heta-eval: cannot write"))
    failed = Path(line.removeprefix("heta-eval: cannot write ").split(":")[0])
    assert failed.name == "report.json" and failed != report
    assert "File too large (disk full or file size limit)" in line
    assert not failed.exists() and not list(failed.parent.glob(".report.json*"))
    assert report.read_bytes() == before

    again = cli(*ARGS)
    assert again.returncode == 0, again.stderr
    resumed = read_report(report_path(again.stdout))
    assert resumed.run.resumed_cases == 48
    assert resumed.score_summary == read_report(report).score_summary


# A process: the file size limit (RLIMIT_FSIZE) would hit pytest itself.
@pytest.mark.slow
def test_a_full_disk_while_storing_documents_stops_the_run_naming_the_object(
    tmp_path: Path,
) -> None:
    big = {"document_id": "big", "text": "kelp forest " * 20_000}  # 240 kB
    docs = write_jsonl(tmp_path / "docs.jsonl", [{"document_id": "a", "text": "alpha"}, big])
    cases = write_jsonl(tmp_path / "cases.jsonl", [{"case_id": "q", "query": "kelp"}])
    root = tmp_path / "outputs"
    done = run_limited(root, tmp_path, 100_000, *jsonl_args(docs, cases), "tracking=none")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    target = root / "store" / "raw" / "benchmarks" / "jsonl" / "test" / "big"
    assert f"heta-eval: cannot write {target / 'big.txt'}: File too large" in done.stderr
    assert not target.exists() or not list(target.iterdir())  # no partial object
    assert not list(root.rglob("report.json"))
