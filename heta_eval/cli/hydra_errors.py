"""Errors Hydra reports itself, said the way heta-eval says its own.

Hydra runs the command inside `hydra._internal.utils.run_and_report`, which prints any
exception it catches (shortened) and exits 1. `guard_hydra()` puts a wrapper in front of it
for three cases, all raised before or around the run itself:

- a file or directory that cannot be written (full disk, read-only directory, no
  permission): `cannot write PATH: reason`, exit 1, as a run says it;
- an override of a key the configuration does not have (`runner.topk=5`, `top_k=5`): the
  nearest keys, exit 2 like every invalid configuration;
- an option a config group does not have (`recipe=bm52`): the nearest options, exit 2;
- a launcher or sweeper whose Hydra plugin is not installed: the extra to install, exit 2;
- a directory Hydra cannot create because a file is in the way (`hydra.run.dir` naming a
  file): the path, exit 2;
- an interpolation Hydra cannot resolve in its own settings (`hydra.run.dir=${recipe.nam}`):
  the key and the reason, exit 2.

Anything else goes to Hydra's own reporting, unchanged.
"""

from __future__ import annotations

import difflib
import errno
import re
import sys
from collections.abc import Callable
from typing import Any

# errno values of a write the user must fix (space, quota, permissions, a read-only mount).
WRITE_ERRORS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS}
_SPACE = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}

# Hydra config groups of plugins -> the extra of heta-eval that installs them.
PLUGIN_EXTRAS = {
    "hydra/launcher/ray": "ray",
    "hydra/launcher/joblib": "sweeps",
    "hydra/launcher/submitit_slurm": "sweeps",
    "hydra/launcher/submitit_local": "sweeps",
    "hydra/sweeper/optuna": "sweeps",
}


def _target(path: str) -> str:
    """The file a temporary name (`DIR/.NAME.RANDOM.tmp`) was going to become."""
    directory, _, name = str(path).rpartition("/")
    match = re.fullmatch(r"\.(.+)\.[^.]+\.tmp", name)
    return f"{directory}/{match.group(1)}" if match and directory else str(path)


def describe_write_error(exc: OSError) -> str:
    """`cannot write FILE: reason (...)` for a failed write, and what is kept."""
    where = _target(exc.filename) if exc.filename else "a file"
    if exc.errno in _SPACE:
        why = "disk full or file size limit"
        fix = "free space"
    else:
        why = "a read-only directory or file, or no permission to write there"
        fix = "make it writable (or choose another directory)"
    return (
        f"cannot write {where}: {exc.strerror} ({why}); results finished before it are "
        f"kept: {fix} and run again to resume"
    )


def _dotted_keys(node: Any, prefix: str = "", depth: int = 0) -> list[str]:
    """Every key path of a config node (`runner.top_k`), nested mappings walked."""
    from omegaconf import DictConfig

    found: list[str] = []
    if not isinstance(node, DictConfig) or depth > 6:
        return found
    for key in node:
        path = f"{prefix}{key}"
        found.append(path)
        try:
            child = node._get_node(key)  # the node itself: no interpolation resolved
        except Exception:
            continue
        if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
            found += _dotted_keys(child, f"{path}.", depth + 1)
    return found


def nearest_keys(exc: BaseException) -> str | None:
    """For an override of a key the config lacks: `did you mean ...?`, or None. Near names
    at the same level come first; a key given without its group (`top_k=5`) finds the
    settings that end with it anywhere (`runner.top_k`)."""
    cause = exc.__cause__
    full_key = getattr(cause, "full_key", None)
    parent = getattr(cause, "parent_node", None)
    key = getattr(cause, "key", None)
    if not full_key or parent is None or key is None or "not in struct" not in str(cause):
        return None
    try:
        keys = [str(k) for k in parent]
    except Exception:  # not a mapping: nothing to suggest from
        return None
    prefix = full_key[: len(full_key) - len(str(key))]
    near = [prefix + n for n in difflib.get_close_matches(str(key), keys, n=3, cutoff=0.6)]
    if not near:
        try:
            root = parent._get_root()
            everywhere = [k for k in _dotted_keys(root) if not k.startswith("hydra.")]
        except Exception:
            everywhere = []
        tails = {k: k.rsplit(".", 1)[-1] for k in everywhere if k.startswith(prefix)}
        near = [k for k, tail in tails.items() if tail == str(key)][:3]
        if not near:
            wanted = str(key).rsplit(".", 1)[-1]
            close = set(difflib.get_close_matches(wanted, set(tails.values()), n=3, cutoff=0.75))
            near = [k for k, tail in tails.items() if tail in close][:3]
    if near:
        return f"{full_key}: no such key; did you mean {', '.join(near)}?"
    shown = ", ".join(sorted(keys))
    return f"{full_key}: no such key; {prefix.rstrip('.') or 'the config'} has: {shown}"


def nearest_option(exc: BaseException) -> str | None:
    """For a config group option that does not exist (`recipe=bm52`): the nearest options
    and all of them, or None."""
    text = str(exc)
    match = re.search(r"Could not find '([^']+)'", text)
    if match is None:
        return None
    group, _, choice = match.group(1).rpartition("/")
    listed = text.split("Available options", 1)[-1] if "Available options" in text else ""
    options = re.findall(r"^\t(\S+)$", listed.split("Config search path", 1)[0], re.M)
    if not group or not options:
        return None
    near = difflib.get_close_matches(choice, options, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(f'{group}={n}' for n in near)}?" if near else ""
    return f"{group}={choice}: no such {group}{hint}\n{group} options: {', '.join(options)}"


def missing_plugin(exc: BaseException) -> str | None:
    """For a launcher or sweeper config Hydra could not load: the extra that installs it."""
    match = re.search(r"Could not load '([^']+)'", str(exc))
    if match is None:
        return None
    for group, extra in PLUGIN_EXTRAS.items():
        if match.group(1) == group:
            choice = group.rsplit("/", 1)[-1]
            return (
                f"{match.group(1)}: the Hydra plugin for {choice!r} is not installed; "
                f"pip install 'heta-eval[{extra}]'"
            )
    return None


# A directory that cannot be created: a file has its name, or is on its path.
_IN_THE_WAY = {errno.EEXIST, errno.ENOTDIR}


def in_the_way(exc: OSError) -> str | None:
    """For a directory that cannot be created because a file is in the way: which, or None."""
    if exc.errno not in _IN_THE_WAY or not exc.filename:
        return None
    return (
        f"cannot create the directory {exc.filename}: {exc.strerror} (a file has that name or "
        "is on its path); choose another hydra.run.dir (or paths.root), or move the file"
    )


def unresolved(exc: BaseException) -> str | None:
    """For an interpolation Hydra could not resolve: `KEY: reason`, or None."""
    from omegaconf.errors import InterpolationResolutionError, MissingMandatoryValue

    if not isinstance(exc, InterpolationResolutionError | MissingMandatoryValue):
        return None
    key = getattr(exc, "full_key", None) or "the configuration"
    message = str(getattr(exc, "msg", None) or exc).splitlines()[0]
    return f"{key}: {message}"


def _report(message: str, code: int, invalid: bool = False) -> None:
    head = "heta-eval: invalid configuration\n" if invalid else "heta-eval: "
    print(f"{head}{message}", file=sys.stderr)
    sys.exit(code)


def _guarded(func: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        from hydra.errors import ConfigCompositionException, MissingConfigException

        # Hydra's MissingConfigException is a ConfigCompositionException, and both are
        # OSErrors (without an errno): the most specific first.
        try:
            return func()
        except MissingConfigException as exc:
            hint = missing_plugin(exc) or nearest_option(exc)
            if hint is None:
                raise
            _report(hint, 2, invalid=True)
        except ConfigCompositionException as exc:
            hint = nearest_keys(exc)
            if hint is None:
                raise
            _report(hint, 2, invalid=True)
        except OSError as exc:
            if (hint := in_the_way(exc)) is not None:
                _report(hint, 2, invalid=True)
            if exc.errno not in WRITE_ERRORS:
                raise
            _report(describe_write_error(exc), 1)
        except Exception as exc:
            hint = unresolved(exc)
            if hint is None:
                raise
            _report(hint, 2, invalid=True)

    return run


def guard_hydra() -> None:
    """Put the wrapper in front of Hydra's `run_and_report` (once; a Hydra without it is
    left alone)."""
    try:
        from hydra._internal import utils
    except ImportError:
        return
    original = getattr(utils, "run_and_report", None)
    if original is None or getattr(original, "heta_eval_guard", False):
        return

    def run_and_report(func: Callable[[], Any]) -> Any:
        return original(_guarded(func))

    run_and_report.heta_eval_guard = True  # type: ignore[attr-defined]
    utils.run_and_report = run_and_report
