"""Create components from `_target_` specs, with errors that say what was meant."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from typing import Any


class ComponentError(ValueError):
    """A `_target_` that cannot be imported or a component that refuses its arguments."""


def _nearest_names(module_path: str, name: str) -> list[str]:
    try:
        module = importlib.import_module(module_path)
    except ImportError:
        return []
    public = [n for n in dir(module) if not n.startswith("_")]
    return [f"{module_path}.{n}" for n in difflib.get_close_matches(name, public, n=3)]


def resolve_target(path: str) -> Any:
    """Import `package.module.Name`; the error names the target and the nearest valid names."""
    if not isinstance(path, str) or "." not in path:
        raise ComponentError(
            f"_target_ must be a dotted path like 'package.module.Name', got {path!r}"
        )
    module_path, _, name = path.rpartition(".")
    try:
        module = importlib.import_module(module_path)
    except ImportError as exc:
        parent, _, leaf = module_path.rpartition(".")
        hint = _nearest_names(parent, leaf) if parent else []
        suffix = f"; did you mean {', '.join(hint)}?" if hint else ""
        raise ComponentError(f"cannot import module of _target_ {path!r}: {exc}{suffix}") from exc
    try:
        return getattr(module, name)
    except AttributeError:
        hint = _nearest_names(module_path, name)
        suffix = f"; did you mean {', '.join(hint)}?" if hint else ""
        raise ComponentError(
            f"_target_ {path!r} not found in module {module_path}{suffix}"
        ) from None


def check_arguments(spec: Mapping[str, Any], where: str) -> None:
    """Refuse keys of `spec` that its `_target_` does not take (unless it takes **kwargs),
    naming `where.KEY` and the nearest argument it does take."""
    import inspect

    target = resolve_target(spec["_target_"])
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return
    parameters = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    accepted = [
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    for key in spec:
        if (key.startswith("_") and key.endswith("_")) or key in accepted:
            continue  # Hydra's own keys (_target_, _args_, _partial_, ...)
        near = difflib.get_close_matches(str(key), accepted, n=1)
        hint = f"; did you mean {where}.{near[0]}?" if near else ""
        raise ComponentError(
            f"{where}.{key}: {spec['_target_']} takes no argument {key!r} "
            f"(it takes {', '.join(accepted) or 'none'}){hint}"
        )


def _hints(target: Any) -> dict[str, Any]:
    """The type hints of `target`'s parameters (its `__init__` for a class); {} when they
    cannot be resolved."""
    import typing

    function = target.__init__ if isinstance(target, type) else target
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception:  # unresolvable forward references: nothing to check against
        return {}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_argument_types(spec: Mapping[str, Any], where: str) -> None:
    """Validate each value of `spec` against the type its `_target_` declares for it (with
    pydantic, so constrained and annotated types check their values too): `where.KEY`, the
    value and what is expected, before the component is created. A string where a number
    is expected is refused, not coerced (the component would get the string), and so is
    `true` or `false` (Python would take it as 1 or 0); a number out of the parameter's
    `config.ranges.Range` is refused with the range."""
    from pydantic import TypeAdapter, ValidationError

    hints = _hints(resolve_target(spec["_target_"]))
    for key, value in spec.items():
        hint = hints.get(str(key))
        if hint is None or (isinstance(value, Mapping) and "_target_" in value):
            continue
        try:
            adapter = TypeAdapter(hint)
        except Exception:  # a type pydantic cannot check (an arbitrary class)
            continue
        try:
            checked = adapter.validate_python(value)
        except ValidationError as exc:
            errors = exc.errors()
            # A check of the value itself (a language, a range) says what is allowed; else
            # the type's own complaints, after what was expected.
            own = [
                e["msg"].removeprefix("Value error, ") for e in errors if e["type"] == "value_error"
            ]
            problems = "; ".join(own or dict.fromkeys(e["msg"] for e in errors))
            expected = "" if own else f" (expected {_shown(hint)})"
            raise ComponentError(
                f"{where}.{key}: {value!r:.80} is not accepted by {spec['_target_']}"
                f"{expected}: {problems}"
            ) from None
        if isinstance(value, str) and _is_number(checked):
            raise ComponentError(
                f"{where}.{key}: {value!r:.80} is not accepted by {spec['_target_']} "
                f"(expected {_shown(hint)}, a number, not a string)"
            )
        if isinstance(value, bool) and _is_number(checked):
            raise ComponentError(
                f"{where}.{key}: {str(value).lower()} is not accepted by {spec['_target_']} "
                f"(expected {_shown(hint)}, a number, not true or false)"
            )


def _shown(hint: Any) -> str:
    """A type hint as a user reads it: `float`, `str | None`, `'lucene' | 'atire'`."""
    import types
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return _shown(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_shown(a) for a in args)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if hint is type(None):
        return "null"
    if isinstance(hint, type) and not args:
        return hint.__name__
    return str(hint).replace("typing.", "")


def instantiate(spec: Mapping[str, Any], /, **overrides: Any) -> Any:
    """Create the object a `{_target_: ..., **kwargs}` spec describes (Hydra semantics)."""
    from hydra.utils import instantiate as hydra_instantiate

    if "_target_" not in spec:
        raise ComponentError(f"component spec has no _target_: {dict(spec)!r}")
    resolve_target(spec["_target_"])
    try:
        return hydra_instantiate(dict(spec), _convert_="all", **overrides)
    except Exception as exc:
        cause = exc.__cause__ or exc
        raise ComponentError(f"cannot create {spec['_target_']}: {cause}") from exc
