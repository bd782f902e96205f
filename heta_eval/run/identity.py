"""A run's identity: the configuration that shapes results, the data and the code.

Two evaluations with the same identity produce the same report, so the second may reuse the
first's; anything else is evaluated (still reusing build and response caches whose own
keys, which include the unit's documents and the code, match).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from heta_eval.code_identity import code_versions, external_sources
from heta_eval.records import RunIdentity

if TYPE_CHECKING:
    from heta_eval.run.assembly import RunComponents


def component_modules(resolved: Mapping[str, Any], objects: Iterable[object]) -> set[str]:
    """Modules that hold the run's components: every `_target_` of the benchmark, recipe and
    evaluator groups (recipe parts are created later, at build time) and the classes of the
    created objects (a benchmark's own evaluators)."""
    modules = {type(obj).__module__ for obj in objects}

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            target = node.get("_target_")
            if isinstance(target, str) and "." in target:
                modules.add(target.rpartition(".")[0])
            for value in node.values():
                walk(value)
        elif isinstance(node, list | tuple):
            for value in node:
                walk(value)

    for group in ("benchmark", "recipe", "evaluator"):
        walk(resolved.get(group))
    return modules


def code_digest(modules: Iterable[str]) -> str:
    """Digest of heta_eval's source, the result-shaping libraries' versions and the source of
    the component modules that live outside heta_eval."""
    material = {"packages": code_versions(), "components": external_sources(modules)}
    payload = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def run_identity(config: str, data: str, code: str) -> RunIdentity:
    """The identity of evaluating `config` on `data` with `code` (each a digest)."""
    digest = hashlib.sha256(f"config:{config}\ndata:{data}\ncode:{code}".encode()).hexdigest()
    return RunIdentity(digest=digest, config=config, data=data, code=code)


def components_code_digest(components: RunComponents) -> str:
    """`code_digest` of the modules a run's components come from."""
    objects = [components.benchmark, components.recipe, *components.evaluators]
    return code_digest(component_modules(components.resolved, objects))
