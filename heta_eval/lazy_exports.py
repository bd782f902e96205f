"""Package attributes imported on first use (PEP 562), so that importing a package loads
none of its heavy modules until one of its names is used."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any


def lazy_exports(
    package: str, modules: Mapping[str, Iterable[str]], namespace: MutableMapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose `namespace` (its globals) gets each
    name of `modules` ({module: names}) from its module on first use."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        # What `_target_` suggestions ("did you mean ...") list for a misspelt name.
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__
