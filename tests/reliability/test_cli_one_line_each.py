"""A stopped or failing run says so in one line (issue 23, item 17): SIGTERM to a run that
evaluates units in worker processes (`runner.workers=2`), to the run alone or to its whole
process group, prints the one stop line and no `Future exception was never retrieved`,
`BrokenProcessPool` or leaked-semaphore warning; a full disk prints one `cannot write` line
and a log file that cannot be written one line, not a `--- Logging error ---` per record.

Real processes: a signal to a run and its process group, and a file size limit
(RLIMIT_FSIZE) that would hit pytest itself; the run before the full disk is in this process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..conftest import InProcessCli
from .conftest import jsonl_args, write_jsonl
from .processes import cli_env, run_limited
from .test_run_disk_full import ARGS as DISK_ARGS
from .test_run_disk_full import first_run

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="Linux process groups")

NOISE = ("Traceback", "Future exception", "BrokenProcessPool", "leaked", "Logging error")
TOPICS = ("kelp", "comet", "glacier", "violin", "copper", "falcon", "tundra", "saffron")


def _units(root: Path) -> list[str]:
    """Eight one-document units (build_scope=case) whose queries take a second each."""
    docs = write_jsonl(
        root / "docs.jsonl",
        [{"document_id": t, "unit_id": t, "text": f"The {t} is described here."} for t in TOPICS],
    )
    cases = write_jsonl(
        root / "cases.jsonl",
        [
            {"case_id": f"q{i}", "unit_id": t, "query": f"about the {t}"}
            for i, t in enumerate(TOPICS)
        ],
    )
    return jsonl_args(
        docs,
        cases,
        "benchmark.build_scope=case",
        "recipe.indexes.bm25._target_=tests.faulty_components.SlowQueries",
        "+recipe.indexes.bm25.seconds=1",
        "runner.workers=2",
        "tracking=none",
    )


# A process: SIGTERM to the run and to its process group.
@pytest.mark.slow
@pytest.mark.parametrize("group", [False, True], ids=["the-run", "its-process-group"])
def test_sigterm_with_unit_workers_prints_one_line(tmp_path: Path, group: bool) -> None:
    root = tmp_path / "outputs"
    victim = subprocess.Popen(
        [sys.executable, "-m", "heta_eval", f"paths.root={root}", *_units(tmp_path)],
        cwd=tmp_path,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    # Three units done: both workers have built a knowledge base (and made the locks that
    # a killed worker would leak) and are running the next units.
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and victim.poll() is None:
        journals = list((root / "state").glob("*/journal.jsonl"))
        if journals and journals[0].read_text().count("\n") >= 4:
            break
        time.sleep(0.05)
    assert victim.poll() is None, victim.communicate()
    if group:
        os.killpg(victim.pid, signal.SIGTERM)
    else:
        victim.send_signal(signal.SIGTERM)
    out, err = victim.communicate(timeout=120)
    assert victim.returncode == 143, out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [
        "heta-eval: stopped by SIGTERM; the case results finished so far are kept: run the "
        "same command again to resume"
    ], err


# A process: the file size limit (RLIMIT_FSIZE) would hit pytest itself.
@pytest.mark.slow
def test_a_full_disk_and_an_unwritable_log_file_say_one_line_each(
    cli: InProcessCli, tmp_path: Path
) -> None:
    _, _, journal = first_run(cli)
    proc = run_limited(
        tmp_path / "outputs",
        tmp_path,
        journal.stat().st_size // 2,
        *DISK_ARGS,
        "runner.resume=false",
        "hydra.job_logging.handlers.file.filename=/dev/full",  # every write: ENOSPC
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert not [n for n in NOISE if n in proc.stderr], proc.stderr
    said = [line for line in proc.stderr.splitlines() if line.startswith("heta-eval: ")]
    assert said == [
        "heta-eval: cannot write the log file /dev/full: No space left on device; it stops "
        "here (the run goes on)",
        f"heta-eval: cannot write {journal}: File too large (disk full or file size limit); "
        "results finished before it are kept: free space and run again to resume",
    ], proc.stderr
