"""Signals from outside: SIGTERM (schedulers, `timeout`, `docker stop`) and Ctrl-C (SIGINT to
the terminal's process group) end the MLflow run KILLED, keep the journal, print one line and
exit 143/130, and the rerun resumes the same run. SIGKILL of a run evaluating units in worker
processes (`runner.workers=2`) leaves none of its processes behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from heta_eval import EvaluationReport
from heta_eval.run.parent_watch import process_gone

from .conftest import mlflow_runs
from .processes import SLOW_INDEX, after_tracking, cli_env, proc_entries, run_cli

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")

ARGS = (
    "benchmark=sample_units",
    SLOW_INDEX,
    "+recipe.indexes.bm25.seconds=0.05",
    "runner.max_concurrent_queries=1",
)


def _start(root: Path, cwd: Path, *args: str) -> subprocess.Popen[str]:
    """The CLI in a session of its own, as a terminal's foreground job is a process group."""
    return subprocess.Popen(
        [sys.executable, "-m", "heta_eval", f"paths.root={root}", *args],
        cwd=cwd,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _journaled(root: Path, victim: subprocess.Popen[str], lines: int) -> None:
    """Wait until the journal has `lines` lines and the tracking run is saved."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and victim.poll() is None:
        journals = list((root / "state").glob("*/journal.jsonl"))
        markers = list((root / "state").glob("*/tracking.json"))
        if markers and journals and journals[0].read_text().count("\n") >= lines:
            return
        time.sleep(0.05)
    out, err = victim.communicate(timeout=60) if victim.poll() is not None else ("", "")
    pytest.fail(f"the run did not get halfway: {out}\n{err}")


def _children(pid: int) -> set[int]:
    """Every live descendant of `pid` (read from /proc)."""
    parents = {proc.pid: proc.ppid for proc in proc_entries() if proc.state != "Z"}
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_the_run_killed_and_the_rerun_resumes(
    tmp_path: Path, signum: signal.Signals, status: int
) -> None:
    root = tmp_path / "outputs"
    args = (*ARGS, after_tracking(root))
    victim = _start(root, tmp_path, *args)
    _journaled(root, victim, 12)
    if signum == signal.SIGINT:
        os.killpg(victim.pid, signum)  # Ctrl-C: the whole foreground process group
    else:
        victim.send_signal(signum)  # `timeout`, `kill`: the process only
    out, err = victim.communicate(timeout=120)
    assert victim.returncode == status, out + err
    assert "Traceback" not in err, err
    said = [line for line in err.splitlines() if line.startswith("heta-eval: stopped by")]
    assert said == [
        f"heta-eval: stopped by {signum.name}; the case results finished so far are kept: "
        "run the same command again to resume"
    ], err
    (killed,) = mlflow_runs(root)
    assert killed.info.status == "KILLED"
    (journal,) = (root / "state").glob("*/journal.jsonl")
    assert journal.read_text().endswith("\n")  # flushed, no torn line

    rerun = run_cli(root, tmp_path, *args)
    assert rerun.returncode == 0, rerun.stderr
    report = EvaluationReport.read_json(rerun.report_path)
    assert 10 <= report.run.resumed_cases < len(report.case_results)
    (run,) = mlflow_runs(root)
    assert run.info.run_id == killed.info.run_id and run.info.status == "FINISHED"


def test_sigkill_with_unit_workers_leaves_no_process_behind(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    victim = _start(root, tmp_path, *ARGS, "runner.workers=2", "tracking=none")
    deadline = time.monotonic() + 240
    seen: set[int] = set()
    # The forkserver, its two unit workers and the resource tracker (+ the report.html worker).
    while time.monotonic() < deadline and victim.poll() is None and len(seen) < 4:
        seen |= _children(victim.pid)
        time.sleep(0.1)
    seen |= _children(victim.pid)
    assert victim.poll() is None and len(seen) >= 4, seen
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=60)  # not communicate(): survivors would hold its pipes open
    assert victim.returncode == -9
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(not process_gone(pid) for pid in seen):
        time.sleep(0.1)
    left = {
        pid: Path(f"/proc/{pid}/cmdline").read_bytes()[:120]
        for pid in seen
        if not process_gone(pid)
    }
    for pid in left:  # not left behind by a failing test either
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for stream in (victim.stdout, victim.stderr):
        assert stream is not None
        stream.close()
    assert not left, f"processes outlived the killed run: {left}"
