"""SIGKILL while a build cache entry, a cached response or the report is being written, and
torn files left behind: the rerun resumes and gives the report an uninterrupted run gives,
and no torn file is ever read as valid.

The kill is real: a test evaluator (tests/faulty_components.KillsItsProcess) installs an
audit hook that SIGKILLs its own `heta-eval` process at the chosen write, once (a marker
file disarms it for the rerun of the same configuration). A kill between queries is
covered by tests/e2e/run/test_resume_after_sigkill.py.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval import EvaluationReport

from ..conftest import InProcessCli
from .conftest import report_path
from .processes import Finished, run_cli, verify_cache

ARGS = ("runner.limit=12", "runner.max_concurrent_queries=1")
# The torn-file tests read the run's own files only (reports, state, journal, cache); their
# runs are not tracked (the killed runs above are tracked and their MLflow run read back),
# and need no process of their own: `heta-eval` runs in this process.
UNTRACKED = (*ARGS, "tracking=none")


def _killer(marker: Path, event: str, contains: str = "", nth: int = 1) -> str:
    return (
        "evaluator.extra=[{_target_:tests.faulty_components.KillsItsProcess,"
        f"marker:'{marker}',event:'{event}',path_contains:'{contains}',nth:{nth}}}]"
    )


def _by_case(report: EvaluationReport) -> dict[tuple[str, str, str], tuple]:
    return {
        (r.unit_id, r.case_id, r.query_mode): (r.scores, tuple(i.id for i in r.retrieved), r.error)
        for r in report.case_results
    }


def _assert_same(report: EvaluationReport, reference: EvaluationReport) -> None:
    assert [(r.unit_id, r.case_id) for r in report.case_results] == [
        (r.unit_id, r.case_id) for r in reference.case_results
    ]
    assert _by_case(report) == _by_case(reference)
    assert report.score_summary == reference.score_summary
    assert report.score_details == reference.score_details


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> EvaluationReport:
    """The killed configurations evaluated without interruption, elsewhere, once for the
    module: the killer is disarmed from the start (its marker exists), and what a run finds
    does not depend on where or when the killer would strike, only on ARGS and its score."""
    cwd = tmp_path_factory.mktemp("reference")
    (cwd / "marker").touch()
    clean = run_cli(cwd / "clean", cwd, *ARGS, _killer(cwd / "marker", "evaluate"), "tracking=none")
    assert clean.returncode == 0, clean.stderr
    return EvaluationReport.read_json(clean.report_path)


def _runs(root: Path) -> list:
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    return client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])


def _killed(root: Path, tmp_path: Path, *args: str) -> Finished:
    victim = run_cli(root, tmp_path, *args)
    assert victim.returncode == -9, victim.stdout + victim.stderr  # SIGKILL, nothing else
    assert (tmp_path / "marker").exists()
    return victim


@pytest.mark.slow
def test_killed_while_writing_the_report(tmp_path: Path, reference: EvaluationReport) -> None:
    root = tmp_path / "outputs"
    args = (*ARGS, _killer(tmp_path / "marker", "os.rename", "report.json"))
    _killed(root, tmp_path, *args)
    # The report was complete in its temporary file, not yet renamed: no report.json, no
    # completion, the journal has every case, the MLflow run is still RUNNING.
    assert not list((root / "runs").rglob("report.json"))
    assert list((root / "runs").rglob(".report.json.*.tmp"))
    assert not list((root / "state").glob("*/done.json"))
    (killed,) = _runs(root)
    assert killed.info.status == "RUNNING"

    rerun = run_cli(root, tmp_path, *args)
    assert rerun.returncode == 0, rerun.stderr
    report = EvaluationReport.read_json(rerun.report_path)
    assert report.run.resumed_cases == len(report.case_results) == 12
    _assert_same(report, reference)
    (run,) = _runs(root)
    assert run.info.run_id == killed.info.run_id and run.info.status == "FINISHED"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("event", "where", "nth"),
    [
        ("open", "kb", 2),  # inside the entry's temporary directory: a half-written entry
        ("os.rename", "kb", 1),  # the entry complete in its temporary directory, not renamed
        ("os.rename", "responses", 3),  # the third cached query response
    ],
)
def test_killed_while_writing_the_cache(
    tmp_path: Path, reference: EvaluationReport, event: str, where: str, nth: int
) -> None:
    root = tmp_path / "outputs"
    args = (*ARGS, _killer(tmp_path / "marker", event, str(root / "cache" / where), nth))
    _killed(root, tmp_path, *args)
    entries, _ = verify_cache(root / "cache")
    if where == "kb":
        assert entries == 0  # what was left is a temporary directory, never an entry
        (left,) = (root / "cache" / "kb").glob("*/.*")
        hours_ago = time.time() - 7200
        os.utime(left, (hours_ago, hours_ago))  # as if the kill was long ago

    rerun = run_cli(root, tmp_path, *args)
    assert rerun.returncode == 0, rerun.stderr
    report = EvaluationReport.read_json(rerun.report_path)
    cache = report.run.cache
    assert cache["discarded"] == 0
    assert cache["hits"] == (1 if where == "responses" else 0)
    assert verify_cache(root / "cache")[0] == 1
    if where == "kb":
        assert not left.exists()  # the rerun's save removed what the killed one left
    _assert_same(report, reference)
    (run,) = _runs(root)
    assert run.info.status == "FINISHED"


@pytest.mark.slow
def test_torn_report_marker_and_journal_are_not_trusted(cli: InProcessCli, tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    first = cli(*UNTRACKED, root=root)
    assert first.returncode == 0, first.stderr
    reference = EvaluationReport.read_json(report_path(first.stdout))
    (state,) = (root / "state").glob("*/done.json")
    journal = state.parent / "journal.jsonl"

    # A torn report in the run directory does not matter: the state keeps its own copy.
    text = report_path(first.stdout).read_text()
    report_path(first.stdout).write_text(text[: len(text) // 2])
    reused = cli(*UNTRACKED, root=root)
    assert reused.returncode == 0 and "already evaluated" in reused.stdout + reused.stderr
    _assert_same(EvaluationReport.read_json(report_path(reused.stdout)), reference)

    # The state's copy torn: not the report it wrote, evaluated again (from the journal).
    kept = state.parent / "report.json"
    kept.write_text(kept.read_text()[: len(text) // 2])
    again = cli(*UNTRACKED, root=root)
    assert again.returncode == 0, again.stderr
    assert "is not the one it wrote" in again.stdout + again.stderr
    assert "already evaluated" not in again.stdout + again.stderr
    report = EvaluationReport.read_json(report_path(again.stdout))
    assert report.run.resumed_cases == 12
    _assert_same(report, reference)

    # A torn completion marker: not finished.
    marker = state.read_text()
    state.write_text(marker[: len(marker) // 2])
    torn_marker = cli(*UNTRACKED, root=root)
    assert torn_marker.returncode == 0, torn_marker.stderr
    assert "already evaluated" not in torn_marker.stdout + torn_marker.stderr
    _assert_same(EvaluationReport.read_json(report_path(torn_marker.stdout)), reference)

    # A journal cut in the middle of its 6th line (a kill mid-write): 4 results are kept,
    # the torn line and everything after it are evaluated again.
    state.unlink()
    lines = journal.read_bytes().splitlines(keepends=True)
    cases = [line for line in lines[1:] if b'"kind": "case"' in line]
    cut = b"".join(lines[:5])
    journal.write_bytes(cut + lines[5][: len(lines[5]) // 2])
    kept = sum(1 for line in lines[1:5] if b'"kind": "case"' in line)
    assert len(cases) == 12 and kept >= 3
    resumed = cli(*UNTRACKED, root=root)
    assert resumed.returncode == 0, resumed.stderr
    report = EvaluationReport.read_json(report_path(resumed.stdout))
    assert report.run.resumed_cases == kept
    _assert_same(report, reference)
    assert journal.read_bytes().endswith(b"\n")


@pytest.mark.slow
def test_torn_cache_files_are_discarded_not_used(cli: InProcessCli, tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    first = cli(*UNTRACKED, root=root)
    assert first.returncode == 0, first.stderr
    reference = EvaluationReport.read_json(report_path(first.stdout))
    entries, responses = verify_cache(root / "cache")
    assert entries == 1 and responses == 12
    (entry,) = (p for p in (root / "cache" / "kb").glob("*/*") if not p.name.startswith("."))
    chunks = entry / "chunks.jsonl"
    chunks.write_bytes(chunks.read_bytes()[:100])
    response = sorted((root / "cache" / "responses").glob("*.json"))[0]
    response.write_bytes(response.read_bytes()[:40])

    again = cli(*UNTRACKED, "runner.resume=false", root=root)
    assert again.returncode == 0, again.stderr
    assert "discarding corrupt build cache entry" in again.stdout + again.stderr
    assert "ignoring corrupt cache file" in again.stdout + again.stderr
    report = EvaluationReport.read_json(report_path(again.stdout))
    cache = report.run.cache
    assert cache["discarded"] == 1 and cache["hits"] == 0 and cache["written"] == 1
    assert cache["response_hits"] == 11 and cache["response_misses"] == 1
    _assert_same(report, reference)
    assert verify_cache(root / "cache") == (1, 12)
