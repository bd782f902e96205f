"""Hydra's own flags on `heta-eval`: `--info`, `--cfg`, `--help` and `-sc` print exactly
what any Hydra app with the same config prints, compared with a plain `@hydra.main` app over
`conf/` run under the same program name, both in this process."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import hydra
import pytest
from omegaconf import DictConfig

from ...cli_in_process import CliResult, call_cli
from ...conftest import REPO

CONF = REPO / "conf"
EXAMPLES_CONF = REPO / "examples" / "conf"


@hydra.main(version_base="1.3", config_path=str(CONF), config_name="config")
def plain_hydra_app(cfg: DictConfig) -> None:
    print("the task ran", file=sys.stderr)


# Each Hydra flag and mode as a user types it, with parts of Hydra's own output that show
# that the mode ran (not our listing).
HYDRA_FLAGS: list[tuple[list[str], tuple[str, ...]]] = [
    (["--info"], ("Config search path", "Defaults Tree", "Config\n******")),
    (["--info", "all"], ("Installed Hydra Plugins", "Defaults Tree", "Config\n******")),
    (["--info", "defaults-tree"], ("Defaults Tree", "hparams_search: null", "launcher: basic")),
    (["--info", "defaults"], ("Defaults List", "benchmark/sample")),
    (["--info", "searchpath"], ("Config search path", "| main     | file://")),
    (["--info", "plugins"], ("Installed Hydra Plugins", "OptunaSweeper", "JoblibLauncher")),
    (["--info", "config"], ("Config\n******", "  _target_: heta_eval.benchmarks.SampleBenchmark")),
    (
        ["--info=searchpath", f"hydra.searchpath=[file://{EXAMPLES_CONF}]"],
        (f"| hydra.searchpath in command-line | file://{EXAMPLES_CONF} |",),
    ),
    (["--cfg", "job"], ("benchmark:\n  _target_: heta_eval.benchmarks.SampleBenchmark",)),
    (["--cfg", "hydra"], ("hydra:\n  run:\n", "MlflowSweepCallback")),
    (["--cfg", "all", "recipe=bm25_fusion"], ("hydra:\n", "name: bm25_fusion")),
    (["-c", "job", "--resolve", "paths.root=/data/out"], ("root: /data/out", "/data/out/store")),
    (["--help"], ("== Configuration groups ==", "heta-eval-info lists", "bm25_optuna")),
    (["--hydra-help"], ("Hydra (1.", "--info,-i")),
    (["-sc", "install=bash"], ("hydra_bash_completion()", "complete -o nospace -o default -F")),
]


def _stable(text: str) -> str:
    """Hydra's output without the plugin scan's timings (they differ between calls, and
    order its table; a slow scan widens its column, so runs of spaces and dashes count as
    one)."""
    kept = (s for s in text.splitlines() if not re.search(r"\d\.\d{3}\b", s))
    return "\n".join(re.sub(r"-{2,}", "-", re.sub(r" {2,}", " ", s)) for s in kept)


# Hydra composes every option of every config group for its help: seconds for each app.
SLOW_FLAGS = {"--help", "--hydra-help"}
CASES = [
    pytest.param(
        flags,
        expected,
        id=" ".join(flags)[:40],
        marks=[pytest.mark.slow] if flags[0] in SLOW_FLAGS else [],
    )
    for flags, expected in HYDRA_FLAGS
]


@pytest.mark.parametrize(("flags", "expected"), CASES)
def test_hydra_flags_print_what_any_hydra_app_prints(
    flags: list[str],
    expected: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def run(main: object = None) -> CliResult:
        return call_cli(
            "heta-eval", flags, cwd=tmp_path, monkeypatch=monkeypatch, capsys=capsys, main=main
        )

    ours, plain = run(), run(plain_hydra_app)
    assert ours.returncode == 0, ours.stderr
    assert plain.returncode == 0, plain.stderr
    assert "the task ran" not in ours.stderr + plain.stderr
    assert _stable(ours.stdout) == _stable(plain.stdout)
    for part in expected:
        assert part in ours.stdout, (flags, part)
    assert "choose an option with GROUP=NAME" not in ours.stdout  # not our listing
    assert not (tmp_path / "outputs").exists()  # nothing ran: no run directory, no MLflow
