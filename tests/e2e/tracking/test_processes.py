"""One run, one process: a tracked single run starts no helper process of its own (no tracker
worker, no figure worker, no tracking service), and a sweep with Hydra's basic launcher runs
every job in its own process, importing MLflow once.

Real `python -m heta_eval` processes, counted two ways: `counted/sitecustomize.py` records,
inside each Python process, every process it starts (audit events and multiprocessing's
spawns), and /proc is read while the run goes on for the descendants it has."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from ...conftest import REPO, user_env
from ...reliability.processes import descendants

COUNTER = Path(__file__).resolve().parent / "counted"

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")


def _counted_run(tmp_path: Path, *args: str, **env: str) -> tuple[Any, list[dict], dict]:
    """`python -m heta_eval ARGS` with outputs under tmp_path/outputs; (the finished process,
    the counter's line of each Python process, {pid: argv} of every descendant /proc showed
    while it ran)."""
    counts = tmp_path / "counts.jsonl"
    flags = [a for a in args if a.startswith("-")]
    overrides = [a for a in args if not a.startswith("-")]
    command = [sys.executable, "-m", "heta_eval", *flags, f"paths.root={tmp_path / 'outputs'}"]
    environment = user_env(
        PYTHONPATH=f"{COUNTER}:{REPO}",
        HETA_EVAL_COUNT_FILE=str(counts),
        PYTHONWARNINGS="ignore::DeprecationWarning",
        **env,
    )
    seen: dict[int, bytes] = {}
    # Files, not pipes: nothing is read while the run goes on (-X importtime writes a lot).
    out_file, err_file = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with (
        out_file.open("w") as stdout,
        err_file.open("w") as stderr,
        subprocess.Popen(
            [*command, *overrides], cwd=tmp_path, env=environment, stdout=stdout, stderr=stderr
        ) as proc,
    ):
        deadline = time.monotonic() + 300
        own = Path(f"/proc/{proc.pid}/cmdline").read_bytes().replace(b"\0", b" ")[:200]
        while proc.poll() is None and time.monotonic() < deadline:
            # A child that still shows the run's own command line is one between its fork
            # and its exec (MLflow's and our git and uname calls): not a process of its own.
            seen.update({p: argv for p, argv in descendants(proc.pid).items() if argv != own})
            time.sleep(0.05)
        proc.wait(timeout=60)
    out, err = out_file.read_text(), err_file.read_text()
    done = subprocess.CompletedProcess(command, proc.returncode, out, err)
    assert done.returncode == 0, err[-3000:]
    lines = [json.loads(line) for line in counts.read_text().splitlines()]
    return done, lines, seen


def _python_helpers(started: list[list[str]], seen: dict[int, bytes]) -> list[str]:
    """What was started that is a Python interpreter (a worker, a service, a spawned
    multiprocessing child), by the counter and by /proc."""
    interpreter = Path(sys.executable).name
    counted = [
        f"{event}: {args}"
        for event, args in started
        if event == "multiprocessing.spawnv_passfds" or event == "os.fork" or "python" in args
    ]
    shown = [argv.decode(errors="replace") for argv in seen.values()]
    return counted + [argv for argv in shown if interpreter in argv or "python" in argv]


@pytest.mark.slow  # a real process: its children are what is counted
def test_a_tracked_run_starts_no_helper_worker(tmp_path: Path) -> None:
    done, lines, seen = _counted_run(tmp_path, "runner.limit=5")
    (main,) = lines  # one Python process: no child interpreter reported
    assert main["argv"][0].endswith("heta_eval/__main__.py")
    assert _python_helpers(main["started"], seen) == []
    report = Path(next(x for x in done.stdout.splitlines() if x.startswith("report: "))[8:])
    run_id = json.loads(report.read_text())["run"]["tracking"]["run_id"]
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}")
    assert client.get_run(run_id).info.status == "FINISHED"


@pytest.mark.slow  # a real process: its imports and children are what is counted
def test_a_basic_launcher_sweep_runs_its_jobs_in_one_process_importing_mlflow_once(
    tmp_path: Path,
) -> None:
    done, lines, seen = _counted_run(
        tmp_path, "-m", "runner.limit=3", "runner.top_k=3,5,8", PYTHONPROFILEIMPORTTIME="1"
    )
    (main,) = lines  # no job in a process of its own
    assert _python_helpers(main["started"], seen) == []
    # -X importtime, inherited by any child interpreter: each import of a module is a line.
    imported = [
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    ]
    assert imported.count("mlflow") == 1, [m for m in imported if m.startswith("mlflow")][:5]
    assert imported.count("heta_eval") == 1
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(runs) == 4 and len(children) == 3
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert "sweep: 3 job(s), 3 finished, 0 failed" in done.stdout


@pytest.mark.slow  # a real process: its children are what is counted
def test_the_count_sees_the_workers_of_a_run_that_has_them(tmp_path: Path) -> None:
    """The control: a run whose units are evaluated in worker processes (runner.workers=2)
    is seen starting Python processes, by the counter and in /proc."""
    args = ("benchmark=sample_units", "runner.workers=2", "runner.limit=3", "tracking=none")
    _, lines, seen = _counted_run(tmp_path, *args)
    main = next(line for line in lines if line["argv"][0].endswith("heta_eval/__main__.py"))
    helpers = _python_helpers(main["started"], seen)
    assert any("multiprocessing" in h for h in helpers), helpers
    assert any("python" in argv.decode(errors="replace") for argv in seen.values()), seen
