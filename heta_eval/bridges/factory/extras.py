"""A framework bridge's optional extra: are its distributions installed, in which versions,
and the one pip command that installs them when they are not."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata


class MissingExtraError(ImportError):
    """A distribution a bridge or an example factory needs is not installed."""


def install_hint(extra: str) -> str:
    """The pip command that installs heta-eval's extra `extra`."""
    return f"pip install 'heta-eval[{extra}]'"


def installed_versions(distributions: Sequence[str]) -> dict[str, str]:
    """The version of each of `distributions` that is installed (missing ones left out)."""
    versions = {}
    for name in distributions:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def require(what: str, distributions: Sequence[str], hint: str) -> dict[str, str]:
    """The versions of `distributions`; a one-line MissingExtraError naming those that are
    missing, what needs them (`what`) and the command that installs them (`hint`)."""
    versions = installed_versions(distributions)
    missing = [name for name in distributions if name not in versions]
    if missing:
        raise MissingExtraError(f"{what} needs {', '.join(missing)} (not installed): {hint}")
    return versions
