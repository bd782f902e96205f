"""Signals from outside: SIGTERM (schedulers, `timeout`, `docker stop`) and Ctrl-C (SIGINT to
the terminal's process group) end the MLflow run KILLED, keep the journal, print one line and
exit 143/130, and the rerun resumes the same run. SIGKILL of a run evaluating units in worker
processes (`runner.workers=2`) leaves none of its processes behind.

Each run is signalled while it is held halfway (tests/gates.py: its later cases wait at a
gate), a state it cannot leave by itself, so the signal always comes mid-run."""

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

from ..gates import pause_after, wait_for_file
from .conftest import mlflow_runs
from .processes import cli_env, descendants, run_cli

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")

PAUSE_AFTER = 12  # cases scored (and journaled) before the run is held


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


@pytest.mark.slow  # signals to a real process, and its rerun
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_the_run_killed_and_the_rerun_resumes(
    tmp_path: Path, signum: signal.Signals, status: int
) -> None:
    root = tmp_path / "outputs"
    paused, gate = tmp_path / "paused", tmp_path / "gate"
    args = ("runner.max_concurrent_queries=1", pause_after(paused, gate, PAUSE_AFTER))
    victim = _start(root, tmp_path, *args)
    wait_for_file(paused, victim)  # 12 cases scored, the 13th held: the run cannot end
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

    gate.touch()
    rerun = run_cli(root, tmp_path, *args)
    assert rerun.returncode == 0, rerun.stderr
    assert "resuming:" in rerun.stdout + rerun.stderr
    report = EvaluationReport.read_json(rerun.report_path)
    assert PAUSE_AFTER <= report.run.resumed_cases < len(report.case_results)
    (run,) = mlflow_runs(root)
    assert run.info.run_id == killed.info.run_id and run.info.status == "FINISHED"


def test_sigkill_with_unit_workers_leaves_no_process_behind(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    paused, gate = tmp_path / "paused", tmp_path / "gate"
    # Each unit worker holds its unit after two cases: the gate never opens.
    args = ("benchmark=sample_units", "runner.workers=2", "tracking=none")
    victim = _start(root, tmp_path, *args, pause_after(paused, gate, 2))
    wait_for_file(paused, victim)
    # The forkserver, its two unit workers and the resource tracker.
    deadline = time.monotonic() + 120
    seen = set(descendants(victim.pid))
    while len(seen) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
        seen |= set(descendants(victim.pid))
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
