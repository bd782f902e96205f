"""A bridge recipe's run identity holds the factory's module (and the user package it
imports), the factory's arguments and the framework's version."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from heta_eval.code_identity import code_versions, external_sources
from heta_eval.config.compose import compose_config
from heta_eval.run.assembly import RunComponents, assemble
from heta_eval.run.identity import component_modules

from .factories import require_frameworks

require_frameworks("langchain_core")

USERS = "tests.unit.bridges.factories"


def _assembled(tmp_path: Path, *overrides: str) -> RunComponents:
    factory = ["~recipe.factory", f"+recipe.factory={{_target_: {USERS}.users_bm25}}"]
    return assemble(
        compose_config([f"paths.root={tmp_path}", "recipe=langchain", *factory, *overrides])
    )


def test_the_factory_module_its_arguments_and_the_framework_version_are_in_the_identity(
    tmp_path: Path,
) -> None:
    components = _assembled(tmp_path)
    modules = component_modules(components.resolved, [components.recipe])
    assert USERS in modules
    # The user's module is hashed by its source, with the modules of its package it imports.
    digests = external_sources(modules)
    assert USERS in digests and "tests.unit.bridges" in digests
    assert not any(name.startswith("heta_eval") for name in digests)
    # Its arguments are configuration.
    deeper = _assembled(tmp_path, "+recipe.factory.k=4")
    assert deeper.config_hash != components.config_hash
    # The framework's version is code.
    versions = code_versions()
    for name in ("langchain-core", "rank-bm25", "llama-index-core", "haystack-ai"):
        assert versions[name] == metadata.version(name)
    assert (
        components.recipe.manifest()["engine_versions"]["langchain-core"]
        == (versions["langchain-core"])
    )
