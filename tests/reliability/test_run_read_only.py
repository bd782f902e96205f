"""A read-only output root, run directory or state directory: the CLI says which path it could
not write and why, in one line as for a full disk (no traceback), exits 1, and what was
evaluated before is kept for a rerun. Run as root, the CLI drops the capabilities that
ignore file permissions (setpriv), as a user's process never has them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import read_report
from .processes import cli_env

DROP = [
    "setpriv",
    "--inh-caps=-dac_override,-dac_read_search",
    "--bounding-set=-dac_override,-dac_read_search",
]


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced")
    prefix = DROP if os.geteuid() == 0 else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "heta_eval", *args],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _read_only(path: Path) -> Path:
    path.mkdir(parents=True)
    path.chmod(0o555)
    return path


def _clean_refusal(done: subprocess.CompletedProcess[str], path: Path) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"heta-eval: cannot write {path}" in done.stderr
    assert "Permission denied (a read-only directory or file" in done.stderr
    assert "Traceback" not in done.stderr


# A process: run as root, only a child without CAP_DAC_OVERRIDE meets the permissions.
@pytest.mark.slow
def test_a_read_only_root_or_state_directory_is_named_without_a_traceback(
    tmp_path: Path,
) -> None:
    locked = _read_only(tmp_path / "locked")
    # Hydra creates the run directory under the root before the run starts.
    done = _run(tmp_path, f"paths.root={locked}", "runner.limit=2", "tracking=none")
    _clean_refusal(done, locked / "runs")
    done = _run(
        tmp_path,
        f"paths.root={tmp_path / 'outputs'}",
        f"runner.state_dir={locked}/state",
        "runner.limit=2",
        "tracking=none",
    )
    _clean_refusal(done, locked / "state")


# A process: run as root, only a child without CAP_DAC_OVERRIDE meets the permissions.
@pytest.mark.slow
def test_a_read_only_run_directory_keeps_the_evaluation_for_the_rerun(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    run_dir = _read_only(tmp_path / "run")
    args = (f"paths.root={root}", "runner.limit=4", "tracking=none")
    done = _run(tmp_path, *args, f"runner.output_dir={run_dir}")
    _clean_refusal(done, run_dir / "report.json")
    run_dir.chmod(0o755)
    again = _run(tmp_path, *args, f"runner.output_dir={run_dir}")
    assert again.returncode == 0, again.stderr
    report = read_report(run_dir / "report.json")
    assert report.run.resumed_cases == 4  # every case result came from the journal
