"""`heta-eval-info`: every option of the config groups, one line each.

Options come from every folder of Hydra's config search path that holds config groups: the
bundled `conf/`, then each `hydra.searchpath` entry (given on the command line, as to
`heta-eval`, or in the primary config), in Hydra's order, so the first folder holding an
option is the one Hydra uses. Options from a folder other than the bundled one are marked
with it. (`heta-eval --info` is Hydra's own: defaults tree, search path, plugins.)

Descriptions come from the YAML files themselves (a recipe's `description`, else the file's
leading comment) and, failing those, from the first docstring line of the `_target_`. Targets
are imported only here, to check that they can be: a target whose import fails, or a file
whose comments say it needs an optional extra that is not installed, is marked "needs extra
'NAME'" instead of failing.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.resources
import importlib.util
import re
import sys
import tomllib
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from heta_eval import __version__
from heta_eval.config import config_dir
from heta_eval.run.settings import RunnerSettings

GROUPS = (
    "benchmark",
    "recipe",
    "evaluator",
    "runner",
    "tracking",
    "experiment",
    "hparams_search",
    "suite",
    "hydra/launcher",
)
_EXTRA_MENTION = re.compile(r"heta-eval\[(\w+)\]|the `(\w+)` extra")
_PIP_MENTION = re.compile(r"pip install ([A-Za-z][\w.-]*)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
# Groups whose options have no `_target_`: described by this class when their file is not.
_GROUP_CLASSES = {"runner": "heta_eval.run.settings.RunnerSettings"}
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class OptionInfo:
    """One YAML file of a config group."""

    group: str
    name: str
    description: str
    target: str | None
    needs: str | None  # "needs extra 'dense' (...)" when it cannot run here


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def extra_requirements(config_dir: Path) -> dict[str, list[str]]:
    """Distribution names of each optional extra of heta-eval (from the installed metadata,
    and from pyproject.toml next to the config groups in a source checkout)."""
    extras: dict[str, list[str]] = {}
    try:
        requires = metadata.requires("heta-eval") or []
    except metadata.PackageNotFoundError:
        requires = []
    for requirement in requires:
        marker = re.search(r"extra\s*==\s*['\"]([\w-]+)['\"]", requirement)
        name = _REQUIREMENT_NAME.match(requirement)
        if marker and name:
            extras.setdefault(marker.group(1), []).append(name.group(1))
    pyproject = config_dir.parent / "pyproject.toml"
    if pyproject.is_file():
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        declared = data.get("project", {}).get("optional-dependencies", {})
        for extra, items in declared.items():
            names = [m.group(1) for m in map(_REQUIREMENT_NAME.match, items) if m]
            extras[extra] = [n for n in names if not n.startswith("heta-eval")]
    return extras


def _extra_of(distribution: str, extras: dict[str, list[str]]) -> str | None:
    """The extra that installs `distribution` (normalized name), if any (not `dev`)."""
    for extra, names in extras.items():
        if extra != "dev" and distribution in map(_normalize, names):
            return extra
    return None


def _missing(distributions: list[str]) -> list[str]:
    absent = []
    for name in distributions:
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            absent.append(name)
    return absent


def _targets(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        target = node.get("_target_")
        if isinstance(target, str) and "${" not in target:
            yield target
        for value in node.values():
            yield from _targets(value)
    elif isinstance(node, list):
        for value in node:
            yield from _targets(value)


def _import(target: str) -> Any:
    """The target object; other packages' targets are only looked up (find_spec), not
    imported, so that listing stays fast (None then)."""
    module, _, attribute = target.rpartition(".")
    top = module.split(".")[0]
    if top != "heta_eval":
        if importlib.util.find_spec(top) is None:
            raise ModuleNotFoundError(f"No module named {top!r}", name=top)
        return None
    return getattr(importlib.import_module(module), attribute)


def _comment_description(text: str) -> str:
    """The first sentence of the file's leading comment (continued over wrapped lines)."""
    parts: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# @package"):
            continue
        body = stripped[1:] if stripped.startswith("#") else None
        if body is None or not body.strip() or body.startswith("   "):
            break  # the comment, or its first paragraph, ended; or an indented example
        if parts and ("heta-eval " in parts[-1] or not body.strip()[0].islower()):
            break  # a usage line is enough; or a new sentence starts on its own line
        parts.append(body.strip())
        if body.rstrip().endswith((".", ":")):
            break
    text = " ".join(parts)
    return _SENTENCE_END.split(text, maxsplit=1)[0].rstrip(":").strip()


def _docstring(obj: Any) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0].strip() if doc else ""


def _inherited(group_dir: Path, data: dict[str, Any]) -> dict[str, Any]:
    """A file's content over the same-group files its `defaults` list names (recipes)."""
    merged: dict[str, Any] = {}
    for entry in data.get("defaults") or []:
        if isinstance(entry, str) and (group_dir / f"{entry}.yaml").is_file():
            base = yaml.safe_load((group_dir / f"{entry}.yaml").read_text(encoding="utf-8"))
            merged |= _inherited(group_dir, base or {})
    return merged | {k: v for k, v in data.items() if k != "defaults"}


def describe_option(
    config_dir: Path, group: str, path: Path, extras: dict[str, list[str]]
) -> OptionInfo:
    """Name, description, target and availability of one YAML file of `group`."""
    text = path.read_text(encoding="utf-8")
    data = _inherited(path.parent, yaml.safe_load(text) or {})
    top_target = data.get("_target_") if isinstance(data.get("_target_"), str) else None
    description = str(data.get("description") or "").strip() or _comment_description(text)
    if not description and group in _GROUP_CLASSES:
        description = _docstring(_import(_GROUP_CLASSES[group]))
    needs: dict[str, list[str]] = {}  # extra (or distribution) -> what is missing
    for target in dict.fromkeys(_targets(data)):
        try:
            obj = _import(target)
        except (ImportError, AttributeError) as exc:
            missing = _normalize((getattr(exc, "name", None) or "").split(".")[0])
            extra = _extra_of(missing, extras)
            needs.setdefault(f"extra '{extra}'" if extra else target, []).append(
                str(exc) if extra is None else missing
            )
            continue
        if target == top_target and not description:
            description = _docstring(obj)
    for match in _EXTRA_MENTION.finditer(text):
        extra = match.group(1) or match.group(2)
        for absent in _missing(extras.get(extra, [])):
            needs.setdefault(f"extra '{extra}'", []).append(absent)
    for match in _PIP_MENTION.finditer(text):
        for absent in _missing([match.group(1)]):
            extra = _extra_of(_normalize(absent), extras)
            needs.setdefault(f"extra '{extra}'" if extra else absent, []).append(absent)
    needs_text = None
    if needs:
        needs_text = "needs " + "; ".join(
            f"{what} (missing: {', '.join(dict.fromkeys(items))})" for what, items in needs.items()
        )
    return OptionInfo(group, path.stem, description or "(no description)", top_target, needs_text)


def _defaults(config_dir: Path) -> dict[str, str]:
    data = yaml.safe_load((config_dir / "config.yaml").read_text(encoding="utf-8")) or {}
    chosen: dict[str, str] = {}
    for entry in data.get("defaults") or []:
        if isinstance(entry, dict):
            for group, option in entry.items():
                if isinstance(option, str):
                    chosen[group] = option
    return chosen


def _runner_settings(path: Path) -> list[tuple[str, str]]:
    """`runner.KEY` with its inline comment, for each key of the runner's YAML."""

    fields = RunnerSettings.model_fields
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^(\w+):\s*(.*?)\s*(?:#\s*(.*))?$", line)
        if match:
            key, value, comment = match.groups()
            field = fields.get(key)
            comment = comment or (field.description if field is not None else None) or ""
            rows.append((f"runner.{key}", f"{comment} (default {value})".strip()))
    return rows


@dataclass(frozen=True)
class ConfigFolder:
    """One folder of config groups on Hydra's search path."""

    path: Path
    entry: str  # as the search path names it: `file://examples/conf`, `pkg://pkg.conf`
    bundled: bool  # the packaged `conf/` (its options are not marked)


class InfoError(Exception):
    """A search path entry that cannot be listed (a missing folder, an unknown package)."""


def _searchpath(config_dir: Path, overrides: Sequence[str]) -> list[str]:
    """`hydra.searchpath` as Hydra composes it: the primary config's, then the overrides'."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with (
            warnings.catch_warnings(),
            initialize_config_dir(config_dir=str(config_dir), version_base="1.3"),
        ):
            # A folder that does not exist is reported by `_entry_path`, naming the entry.
            warnings.filterwarnings("ignore", message=".* is not available", category=UserWarning)
            cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()
    return [str(entry) for entry in cfg.hydra.searchpath or []]


def _entry_path(entry: str) -> Path:
    """The folder a `file://` or `pkg://` search path entry names."""
    scheme, sep, rest = entry.partition("://")
    if not sep:
        scheme, rest = "file", entry
    if scheme == "file":
        path = Path(rest).expanduser()  # relative: from the current directory, as Hydra does
        if not path.is_dir():
            raise InfoError(f"hydra.searchpath: {entry}: no such folder ({path.resolve()})")
        return path
    if scheme == "pkg":
        module, _, sub = rest.partition("/")
        try:
            base = Path(str(importlib.resources.files(module)))
        except (ModuleNotFoundError, TypeError) as exc:
            raise InfoError(f"hydra.searchpath: {entry}: {exc}") from None
        return base / sub if sub else base
    raise InfoError(f"hydra.searchpath: {entry}: expected a file:// or pkg:// entry")


def config_folders(config_dir: Path, overrides: Sequence[str] = ()) -> list[ConfigFolder]:
    """The bundled config folder, then each `hydra.searchpath` folder, in Hydra's order."""
    folders = [ConfigFolder(config_dir, f"file://{config_dir}", bundled=True)]
    for entry in _searchpath(config_dir, overrides):
        path = _entry_path(entry)
        if path.resolve() != config_dir.resolve():
            folders.append(ConfigFolder(path, entry, bundled=False))
    return folders


def collect(
    config_dir: Path, folders: Sequence[ConfigFolder] | None = None
) -> list[tuple[OptionInfo, ConfigFolder]]:
    """Every option of every group in `GROUPS`, in group order, sorted by name, with the
    folder it comes from (the first on the search path that holds it)."""
    extras = extra_requirements(config_dir)
    folders = folders or [ConfigFolder(config_dir, f"file://{config_dir}", bundled=True)]
    options = []
    for group in GROUPS:
        found: dict[str, tuple[Path, ConfigFolder]] = {}
        for folder in folders:
            for path in sorted((folder.path / group).glob("*.yaml")):
                found.setdefault(path.stem, (path, folder))
        for name in sorted(found):
            path, folder = found[name]
            options.append((describe_option(config_dir, group, path, extras), folder))
    return options


def render(config_dir: Path, overrides: Sequence[str] = ()) -> str:
    """The text `heta-eval-info` prints."""
    folders = config_folders(config_dir, overrides)
    defaults = _defaults(config_dir)
    options = collect(config_dir, folders)
    width = max(len(o.name) for o, _ in options) + 2
    columns = _columns()
    lines = [
        f"heta-eval {__version__}: choose an option with GROUP=NAME, e.g. "
        "heta-eval benchmark=sample_units recipe=bm25_fusion",
        f"config groups: {config_dir}",
    ]
    for folder in folders:
        if not folder.bundled:
            lines.append(f"  and {folder.entry} (hydra.searchpath): options marked [from ...]")
    for group in GROUPS:
        default = defaults.get(group.split("/")[-1] if group.startswith("hydra/") else group)
        heading = f"{group}" + (f" (default: {default})" if default else "")
        lines.append("")
        lines.append(heading)
        for option, folder in (item for item in options if item[0].group == group):
            text = option.description + (f"  [{option.needs}]" if option.needs else "")
            if not folder.bundled:
                text += f"  [from {folder.entry}]"
            lines += _wrapped(f"  {option.name:<{width}}", text, columns)
        if group == "runner":
            settings = _runner_settings(config_dir / "runner" / "default.yaml")
            key_width = max(len(key) for key, _ in settings) + 2
            for key, comment in settings:
                lines += _wrapped(f"    {key:<{key_width}}", comment, columns)
    return "\n".join(lines)


def _wrapped(head: str, text: str, columns: int) -> list[str]:
    """`head` + `text` within `columns` characters, continued under the text's start."""
    import textwrap

    if len(head) + len(text) <= columns:
        return [head + text]
    return textwrap.wrap(
        text,
        width=columns,
        initial_indent=head,
        subsequent_indent=" " * len(head),
        break_on_hyphens=False,
        break_long_words=False,
    )


def _columns() -> int:
    """The terminal's width, else $COLUMNS, else 120."""
    import os
    import shutil

    if sys.stdout.isatty():
        return shutil.get_terminal_size((120, 24)).columns
    return int(os.environ.get("COLUMNS") or 120)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="heta-eval-info",
        description=(
            "List every option of heta-eval's config groups (benchmark, recipe, evaluator, "
            "runner, tracking, experiment, hparams_search, hydra/launcher) with one line "
            "each. Options from your own config folders are listed too, marked with the "
            "folder: pass the same hydra.searchpath override you give heta-eval."
        ),
        epilog="example: heta-eval-info 'hydra.searchpath=[file://examples/conf]'",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="Hydra overrides, as for heta-eval (hydra.searchpath=[file://DIR] adds a folder)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point of `heta-eval-info`: print the options; 0 on success, 2 for a
    search path or override that cannot be read."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    args = _parser().parse_args(argv)
    try:
        text = render(config_dir(), args.overrides)
    except (InfoError, HydraException, OmegaConfBaseException) as exc:
        print(f"heta-eval-info: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
