"""Console scripts called in this process: the same entry points as `heta-eval ...`, without
a new interpreter (no second import of MLflow, Hydra or the package per call).

A test that needs a real process (signals, a kill and resume, a server, the installed
script itself) uses `run_cli` (a subprocess) instead; everything else uses `cli`.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
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
    main: Callable[[], object] | None = None,
) -> CliResult:
    """Run one console script's `main` with `args` in `cwd`; its output and exit status.
    `main`: another function run as `program` (e.g. a plain Hydra app to compare with)."""
    capsys.readouterr()
    code = _call(main or _entry(program), program, args, cwd, monkeypatch)
    out = capsys.readouterr()
    return CliResult(code, out.out, out.err)


def call_cli_once(program: str, args: list[str], *, cwd: Path) -> CliResult:
    """`call_cli` for a module- or session-scoped fixture (no `capsys` or `monkeypatch`
    there): the output is caught by redirecting `sys.stdout` and `sys.stderr`."""
    out, err = io.StringIO(), io.StringIO()
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = _call(_entry(program), program, args, cwd, monkeypatch)
    return CliResult(code, out.getvalue(), err.getvalue())


def _call(
    main: Callable[[], object],
    program: str,
    args: list[str],
    cwd: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> int:
    from hydra.core.global_hydra import GlobalHydra

    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    saved_environment = dict(os.environ)  # what a command sets there ends with its process
    root_handlers = list(logging.getLogger().handlers)
    with monkeypatch.context() as patch:
        patch.chdir(cwd)
        patch.setattr(sys, "argv", [program, *args])
        try:
            # What a console script does with it: `sys.exit(main())`.
            code = _status(main())
        except SystemExit as exc:
            code = _status(exc.code)
        finally:
            GlobalHydra.instance().clear()
            if os.environ != saved_environment:
                os.environ.clear()
                os.environ.update(saved_environment)
            for sig, handler in saved_signals.items():
                signal.signal(sig, handler)
            root = logging.getLogger()
            for handler in list(root.handlers):
                if handler not in root_handlers:
                    root.removeHandler(handler)
                    handler.close()
    return code
