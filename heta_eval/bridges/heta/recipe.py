"""HetaRecipe: a Heta Framework recipe that heta_eval's runner evaluates (a `RecipeLike`).

Its specs are validated when it is created (a bad `_target_`, a missing component, a query
mode the steps do not provide); each build instantiates them afresh, copies the raw sources
into Heta's object store under the same keys, runs Heta's `KnowledgeBase.create` with the
tokenizer kept offline, and wraps the result in a `HetaKnowledgeBase`.
"""

from __future__ import annotations

import inspect
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

from heta_eval.bridges.heta.components import (
    MODEL_KINDS,
    PARSER_KINDS,
    STORE_KINDS,
    build,
    component_group,
    heta_kb_name,
    plain,
    require_heta,
)
from heta_eval.bridges.heta.knowledge_base import HetaKnowledgeBase
from heta_eval.bridges.heta.tokenizer import encoding_names, offline_tokenizer
from heta_eval.config.secrets import mask_secrets
from heta_eval.kb.documents import RawSource
from heta_eval.kb.store import ObjectStore
from heta_eval.protocols import BaseRecipe


class HetaRecipe(BaseRecipe):
    """A Heta Framework recipe that heta_eval's runner can evaluate (a `RecipeLike`).

    `stores`, `parsers` and `models` map Heta's component kinds (`objects`, `text_index`,
    `documents`, `language`, ..., plus `named`) to `_target_` specs; `steps` lists Heta
    steps or procedures as `_target_` specs (`chunk_size`/`chunk_overlap` are recorded in
    the manifest for sweeps; the YAML wires them into the split step). Without
    `stores.objects` each build gets a fresh Heta `LocalObjectStore` in a temporary
    directory, removed with the knowledge base.
    `query_modes` are Heta's mode names (e.g. `full_text_search`); by default all the modes
    the steps provide. Specs are kept and instantiated per build, so every knowledge base
    has its own stores and the recipe pickles into worker processes.
    """

    def __init__(
        self,
        *,
        name: str,
        steps: Sequence[Mapping[str, Any]],
        query_modes: Sequence[str] | None = None,
        stores: Mapping[str, Any] | None = None,
        parsers: Mapping[str, Any] | None = None,
        models: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        description: str | None = None,
        allow_network: bool = False,
        keep_workdir: bool = False,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
    ) -> None:
        self.heta_version = require_heta()
        if not str(name).strip():
            raise ValueError("name must not be empty")
        self._name = str(name)
        self.description = description
        self.steps = plain(list(steps))
        if not self.steps:
            raise ValueError("steps: a Heta recipe needs at least one step")
        self.stores = plain(dict(stores or {}))
        self.parsers = plain(dict(parsers or {}))
        self.models = plain(dict(models or {}))
        self.metadata = {str(k): str(v) for k, v in plain(dict(metadata or {})).items()}
        self.allow_network = bool(allow_network)
        self.keep_workdir = bool(keep_workdir)
        # Recorded only; steps read them through interpolation (`${....chunk_size}`).
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        # Validate now (bad _target_, missing component, unknown mode), not mid-run.
        recipe = self._heta_recipe(self._components(placeholder_objects=True))
        recipe.require_valid(initial_artifacts=("benchmark_document_keys", "source_keys"))
        provided = tuple(sorted(recipe.manifest().capabilities_provided))
        modes = tuple(query_modes) if query_modes else provided
        unknown = [m for m in modes if m not in provided]
        if not modes or unknown:
            raise ValueError(
                f"query_modes: {unknown or list(modes)} are not provided by the Heta steps; "
                f"they provide {list(provided)}"
            )
        self._query_modes = modes

    def __repr__(self) -> str:
        return f"HetaRecipe(name={self._name!r}, query_modes={self._query_modes!r})"

    @property
    def name(self) -> str:
        return self._name

    @property
    def query_modes(self) -> tuple[str, ...]:
        return self._query_modes

    def manifest(self) -> dict[str, Any]:
        """The recipe as JSON-ready data (secrets masked), with the Heta version."""
        return mask_secrets(
            {
                "_target_": f"{type(self).__module__}.{type(self).__qualname__}",
                "engine": "heta-framework",
                "engine_version": self.heta_version,
                "name": self._name,
                "description": self.description,
                "query_modes": list(self._query_modes),
                "stores": self.stores,
                "parsers": self.parsers,
                "models": self.models,
                "steps": self.steps,
                "metadata": self.metadata,
                "allow_network": self.allow_network,
                "chunk_size": self.chunk_size,
                "chunk_overlap": self.chunk_overlap,
            }
        )

    # -- building ---------------------------------------------------------------------------

    def _components(self, *, placeholder_objects: bool = False) -> dict[str, Any]:
        stores = component_group(self.stores, STORE_KINDS, "stores")
        if "objects" not in stores and placeholder_objects:
            from heta_framework.common.stores.object import LocalObjectStore

            stores["objects"] = LocalObjectStore(tempfile.gettempdir())  # never written
        return {
            "stores": stores,
            "parsers": component_group(self.parsers, PARSER_KINDS, "parsers"),
            "models": component_group(self.models, MODEL_KINDS, "models"),
            "steps": [build(s, f"steps[{i}]") for i, s in enumerate(self.steps)],
        }

    def _heta_recipe(self, components: Mapping[str, Any]) -> Any:
        from heta_framework.kb import (
            KnowledgeModels,
            KnowledgeParsers,
            KnowledgeRecipe,
            KnowledgeStores,
        )

        return KnowledgeRecipe(
            models=KnowledgeModels(**components["models"]),
            stores=KnowledgeStores(**components["stores"]),
            parsers=KnowledgeParsers(**components["parsers"]),
            steps=tuple(components["steps"]),
            metadata=self.metadata,
        )

    async def create_knowledge_base(
        self, *, name: str, store: ObjectStore, sources: Sequence[RawSource]
    ) -> HetaKnowledgeBase:
        """Copy the raw sources into Heta's object store and run Heta's build."""
        from heta_framework.common.stores.object import LocalObjectStore
        from heta_framework.kb import KnowledgeBase

        clock = time.perf_counter()
        components = self._components()
        workdir: str | None = None
        if "objects" not in components["stores"]:
            workdir = tempfile.mkdtemp(prefix="heta-kb-")
            components["stores"]["objects"] = LocalObjectStore(workdir)
        try:
            objects = components["stores"]["objects"]
            keys = [s.key for s in sources]
            foreign = sorted({o.key for o in await objects.list("raw")} - set(keys))
            if foreign:
                raise RuntimeError(
                    f"Heta's object store already holds {len(foreign)} raw object(s) that are "
                    f"not sources of this build (e.g. {foreign[0]!r}); Heta would index them too"
                )
            for key in keys:  # the raw-key contract: same keys in both stores
                await objects.put(key, store.get(key))
            recipe = self._heta_recipe(components)
            step_started = time.perf_counter()
            with offline_tokenizer(self.steps, allow_network=self.allow_network) as tokenizer:
                created = KnowledgeBase.create(
                    recipe=recipe,
                    name=heta_kb_name(name),
                    initial_artifacts={"benchmark_document_keys": keys, "source_keys": keys},
                )
                kb = await created if inspect.isawaitable(created) else created
            heta_seconds = time.perf_counter() - step_started
            record = kb.run_record
            if record.status != "succeeded":
                errors = [f"{r.step_name}: {r.error}" for r in record.step_records if r.error] or [
                    str(record.status)
                ]
                raise RuntimeError(f"Heta build of {name!r} failed: {'; '.join(errors)}")
        except BaseException:
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)
            raise
        return HetaKnowledgeBase(
            kb,
            name=name,
            recipe_name=self._name,
            query_modes=self._query_modes,
            engine_version=self.heta_version,
            unicode_offsets=encoding_names(self.steps) == {"unicode"},
            sources=sources,
            build_seconds=time.perf_counter() - clock,
            heta_build_seconds=heta_seconds,
            tokenizer=tokenizer,
            workdir=None if self.keep_workdir else workdir,
        )
