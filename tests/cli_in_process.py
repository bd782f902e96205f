"""Console scripts called in this process: the same entry points as `heta-eval ...`, without
a new interpreter (no second import of MLflow, Hydra or the package per call).

A test that needs a real process (signals, a kill and resume, a server, the installed
script itself) uses `run_cli` (a subprocess) instead; everything else uses `cli`.
"""

from __future__ import annotations

import importlib
import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

# The console scripts of pyproject.toml, by program name.
ENTRY_POINTS = {
    "heta-eval": "heta_eval.cli.main:main",
    "heta-eval-prepare": "heta_eval.cli.prepare:main",
    "heta-eval-compare": "heta_eval.cli.compare:main",
    "heta-eval-runs": "heta_eval.cli.runs:main",
    "heta-eval-sync": "heta_eval.cli.sync:main",
    "heta-eval-info": "heta_eval.cli.info:main",
    "heta-eval-export-predictions": "heta_eval.cli.export_predictions:main",
    "heta-eval-reproduce": "heta_eval.cli.reproduce:cli",
}


@dataclass(frozen=True)
class CliResult:
    """What a console script did: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def _entry(program: str) -> Callable[[], object]:
    module, _, name = ENTRY_POINTS[program].partition(":")
    return getattr(importlib.import_module(module), name)


def _status(code: object) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def call_cli(
    program: str,
    args: list[str],
    *,
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> CliResult:
    """Run one console script's `main` with `args` in `cwd`; its output and exit status."""
    from hydra.core.global_hydra import GlobalHydra

    main = _entry(program)
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    root_handlers = list(logging.getLogger().handlers)
    capsys.readouterr()
    with monkeypatch.context() as patch:
        patch.chdir(cwd)
        patch.setattr(sys, "argv", [program, *args])
        try:
            code = _status(main())  # a console script exits with what main returns
        except SystemExit as exc:
            code = _status(exc.code)
        finally:
            GlobalHydra.instance().clear()
            for sig, handler in saved_signals.items():
                signal.signal(sig, handler)
            root = logging.getLogger()
            for handler in list(root.handlers):
                if handler not in root_handlers:
                    root.removeHandler(handler)
                    handler.close()
    out = capsys.readouterr()
    return CliResult(code, out.out, out.err)
