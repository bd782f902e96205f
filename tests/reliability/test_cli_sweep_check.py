"""Sweeps are validated before launch, and Hydra's own refusals say what to do: an invalid job
stops the sweep with exit 2 before any job runs or the MLflow parent exists; a search without
`optimized_metric` stops before its first trial; a launcher whose plugin is missing names the
extra to install."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import REPO, InProcessCli
from .conftest import nothing_written
from .processes import run_cli

# Makes the Ray launcher plugin fail to import, as when `heta-eval[ray]` is not installed.
HIDE_RAY = """
import sys


class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name == "ray" or name.startswith(("ray.", "hydra_plugins.hydra_ray_launcher.")):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""


def test_a_sweep_with_an_invalid_job_exits_2_before_anything_runs(
    cli: InProcessCli, tmp_path: Path
) -> None:
    root = tmp_path / "outputs"
    done = cli("-m", "recipe.chunk_size=64,128", "runner.top_k=-1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "heta-eval: invalid configuration of sweep job 0 of 2" in done.stderr
    assert "runner.top_k: Input should be greater than 0 (got -1)" in done.stderr
    assert "Traceback" not in done.stderr
    assert nothing_written(root) and not (root / "multiruns").exists()


def test_a_sweep_whose_second_job_is_invalid_runs_no_job(cli: InProcessCli, tmp_path: Path) -> None:
    done = cli("-m", "recipe.chunk_size=64,0")
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "sweep job 1 of 2 (" in done.stderr
        and "recipe.chunk_size=0); no job was run" in done.stderr
    )
    assert "recipe.chunk_size: Input should be greater than 0" in done.stderr
    assert nothing_written(tmp_path / "outputs")


def test_a_search_without_optimized_metric_stops_before_the_first_trial(
    cli: InProcessCli, tmp_path: Path
) -> None:
    # It used to run every trial, then fail in Optuna with "No trials are completed yet".
    done = cli(
        "-m", "hparams_search=bm25_optuna", "optimized_metric=null", "hydra.sweeper.n_trials=2"
    )
    assert done.returncode != 0
    assert "optimized_metric: a value is required by the hyperparameter search" in done.stderr
    assert not list((tmp_path / "outputs").rglob("report.json"))
    assert "No trials are completed" not in done.stderr


# A process: the plugin must be missing from the interpreter's start (sitecustomize), and
# Hydra's plugin registry of this process has seen it already.
@pytest.mark.slow
def test_a_launcher_without_its_plugin_names_the_extra(tmp_path: Path) -> None:
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(HIDE_RAY)
    root = tmp_path / "outputs"
    done = run_cli(
        root,
        tmp_path,
        "-m",
        "hydra/launcher=ray_cluster",
        "recipe.chunk_size=64,128",
        PYTHONPATH=f"{hide}:{REPO}",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the Hydra plugin for 'ray' is not installed; pip install 'heta-eval[ray]'" in (
        done.stderr
    )
    assert nothing_written(root)
