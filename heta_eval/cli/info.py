"""`heta-eval --info`: every option of the config groups, one line each.

Descriptions come from the YAML files themselves (a recipe's `description`, else the file's
leading comment) and, failing those, from the first docstring line of the `_target_`. Targets
are imported only here, to check that they can be: a target whose import fails, or a file
whose comments say it needs an optional extra that is not installed, is marked "needs extra
'NAME'" instead of failing.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

GROUPS = (
    "benchmark",
    "recipe",
    "evaluator",
    "runner",
    "tracking",
    "experiment",
    "hparams_search",
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
    from heta_eval.run.settings import RunnerSettings

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


def collect(config_dir: Path) -> list[OptionInfo]:
    """Every option of every group in `GROUPS`, in group order, sorted by name."""
    extras = extra_requirements(config_dir)
    options = []
    for group in GROUPS:
        for path in sorted((config_dir / group).glob("*.yaml")):
            options.append(describe_option(config_dir, group, path, extras))
    return options


def render(config_dir: Path) -> str:
    """The text `heta-eval --info` prints."""
    from heta_eval import __version__

    defaults = _defaults(config_dir)
    options = collect(config_dir)
    width = max(len(o.name) for o in options) + 2
    lines = [
        f"heta-eval {__version__}: choose an option with GROUP=NAME, e.g. "
        "heta-eval benchmark=sample_units recipe=bm25_fusion",
        f"config groups: {config_dir}",
    ]
    for group in GROUPS:
        default = defaults.get(group.split("/")[-1] if group.startswith("hydra/") else group)
        heading = f"{group}" + (f" (default: {default})" if default else "")
        lines.append("")
        lines.append(heading)
        for option in (o for o in options if o.group == group):
            text = option.description + (f"  [{option.needs}]" if option.needs else "")
            lines.append(f"  {option.name:<{width}}{text}")
        if group == "runner":
            settings = _runner_settings(config_dir / "runner" / "default.yaml")
            key_width = max(len(key) for key, _ in settings) + 2
            for key, comment in settings:
                lines.append(f"    {key:<{key_width}}{comment}")
    return "\n".join(lines)


def main(config_dir: Path) -> int:
    """Print the options; 0 on success."""
    sys.stdout.write(render(config_dir) + "\n")
    return 0
