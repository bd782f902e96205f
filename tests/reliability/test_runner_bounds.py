"""Runner settings that would hold a run for minutes or swamp the machine (issue 23, item 16):
`runner.bootstrap_resamples` has an upper bound, refused before any work; `runner.workers`
beyond the CPUs the run may use is capped to them, and the run says so."""

from __future__ import annotations

import os
from pathlib import Path

from .conftest import nothing_written
from .processes import run_cli


def test_bootstrap_resamples_beyond_the_bound_exit_2_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    done = run_cli(root, tmp_path, "runner.bootstrap_resamples=100000000", timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "runner.bootstrap_resamples: Input should be less than or equal to 100000 (got 100000000)"
    ) in done.stderr
    assert "Traceback" not in done.stderr
    assert nothing_written(root)


def test_workers_beyond_the_cpus_are_capped_with_a_warning(tmp_path: Path) -> None:
    cpus = len(os.sched_getaffinity(0))
    done = run_cli(
        tmp_path / "outputs", tmp_path, "runner.workers=10000", "runner.dry_run=true", timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert (
        f"runner.workers=10000 is more than the {cpus} CPU(s) this machine gives the run; "
        f"using {cpus} worker(s)"
    ) in said
    assert f"workers: {cpus}\n" in done.stdout
