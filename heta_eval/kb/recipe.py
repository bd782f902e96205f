"""KnowledgeRecipe: the declarative build plan of a knowledge base."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from heta_eval.config.components import instantiate, resolve_target
from heta_eval.config.ranges import MAX_CHUNK_SIZE
from heta_eval.config.secrets import mask_secrets
from heta_eval.kb.knowledge_base import KnowledgeBase
from heta_eval.protocols import BaseRecipe
from heta_eval.records._base import JsonDict, NonEmptyStr, Record


def _as_plain(value: Any) -> Any:
    """OmegaConf containers become plain dicts and lists."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf is a core dependency
        return value
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


class KnowledgeRecipe(Record, BaseRecipe):
    """How to build a knowledge base: parser → chunker → indexes, and the query modes offered.

    Components are `_target_` specs, created when a knowledge base is built, so the recipe
    itself stays a plain, serialisable description (its `manifest()` is logged with every
    report). `chunk_size` and `chunk_overlap` live at the top so sweeps can address them
    as `recipe.chunk_size`; the chunker spec refers to them.
    """

    name: NonEmptyStr
    description: str = ""
    chunk_size: int | None = Field(default=None, gt=0, le=MAX_CHUNK_SIZE)
    chunk_overlap: int = Field(default=0, ge=0, lt=MAX_CHUNK_SIZE)
    parser: JsonDict
    chunker: JsonDict
    indexes: dict[str, JsonDict]
    fusions: dict[str, JsonDict] = Field(default_factory=dict)
    reranker: JsonDict | None = None
    answerer: JsonDict | None = None
    query_modes: tuple[str, ...] = ()
    metadata: JsonDict = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _plain(cls, data: Any) -> Any:
        data = _as_plain(data)
        if isinstance(data, dict):
            return {k: _as_plain(v) for k, v in data.items() if k not in ("_target_",)}
        return data

    @field_validator("parser", "chunker")
    @classmethod
    def _is_component(cls, value: JsonDict, info: Any) -> JsonDict:
        if "_target_" not in value:
            raise ValueError(f"{info.field_name} needs a _target_")
        resolve_target(value["_target_"])
        return value

    @field_validator("indexes")
    @classmethod
    def _indexes(cls, value: dict[str, JsonDict]) -> dict[str, JsonDict]:
        if not value:
            raise ValueError("a recipe needs at least one index")
        for mode, spec in value.items():
            if "_target_" not in spec:
                raise ValueError(f"index {mode!r} needs a _target_")
            resolve_target(spec["_target_"])
        return value

    @field_validator("fusions")
    @classmethod
    def _fusions(cls, value: dict[str, JsonDict]) -> dict[str, JsonDict]:
        for mode, spec in value.items():
            if "_target_" not in spec:
                raise ValueError(f"fusion {mode!r} needs a _target_")
            resolve_target(spec["_target_"])
        return value

    @field_validator("answerer", "reranker")
    @classmethod
    def _optional_component(cls, value: JsonDict | None, info: Any) -> JsonDict | None:
        if value is not None:
            if "_target_" not in value:
                raise ValueError(f"{info.field_name} needs a _target_")
            resolve_target(value["_target_"])
        return value

    @model_validator(mode="after")
    def _modes(self) -> KnowledgeRecipe:
        if self.chunk_size is not None and self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than "
                f"chunk_size ({self.chunk_size})"
            )
        clash = sorted(set(self.fusions) & set(self.indexes))
        if clash:
            raise ValueError(f"fusions and indexes share the names {clash}; rename one")
        for mode, spec in self.fusions.items():
            parts = [m for m in spec.get("modes", []) if m not in self.indexes]
            if parts:
                raise ValueError(
                    f"fusions.{mode}.modes names modes that are not in indexes: {parts}; "
                    f"indexes: {sorted(self.indexes)}"
                )
        offered = [*self.indexes, *self.fusions]
        if not self.query_modes:
            object.__setattr__(self, "query_modes", tuple(offered))
        unknown = [m for m in self.query_modes if m not in offered]
        if unknown:
            raise ValueError(
                f"query_modes {unknown} are neither in indexes nor in fusions; "
                f"available: {sorted(offered)}"
            )
        return self

    def component_specs(self) -> dict[str, JsonDict]:
        """Every component spec by its key in the recipe (`chunker`, `indexes.bm25`, ...)."""
        specs: dict[str, JsonDict] = {"parser": self.parser, "chunker": self.chunker}
        specs.update({f"indexes.{mode}": spec for mode, spec in self.indexes.items()})
        specs.update({f"fusions.{mode}": spec for mode, spec in self.fusions.items()})
        if self.reranker is not None:
            specs["reranker"] = self.reranker
        if self.answerer is not None:
            specs["answerer"] = self.answerer
        return specs

    def create_parser(self) -> Any:
        """The parser this recipe names."""
        return instantiate(self.parser)

    def create_chunker(self) -> Any:
        """The chunker this recipe names."""
        return instantiate(self.chunker)

    def create_fusions(self) -> dict[str, Any]:
        """One fusion per hybrid query mode."""
        return {mode: instantiate(spec) for mode, spec in self.fusions.items()}

    def create_reranker(self) -> Any:
        """The reranker applied to every query mode's results, or None."""
        return instantiate(self.reranker) if self.reranker is not None else None

    def create_answerer(self) -> Any:
        """The answer generator, or None when the recipe only retrieves."""
        return instantiate(self.answerer) if self.answerer is not None else None

    def create_index_builders(self) -> dict[str, Any]:
        """One index builder per query mode."""
        return {mode: instantiate(spec) for mode, spec in self.indexes.items()}

    async def create_knowledge_base(self, *, name: str, store: Any, sources: Any) -> Any:
        """Build a KnowledgeBase from `sources` in `store` (the RecipeLike protocol)."""
        return await KnowledgeBase.create(recipe=self, name=name, store=store, sources=sources)

    def build_settings(self) -> JsonDict:
        """What determines the built knowledge base (for cache keys): parser, chunker,
        indexes and chunk sizes — not the name, description or the query modes offered."""
        return self.model_dump(
            mode="json", include={"chunk_size", "chunk_overlap", "parser", "chunker", "indexes"}
        )

    def manifest(self) -> JsonDict:
        """The recipe as JSON-ready data (secrets masked), for reports, tags and cache keys."""
        return mask_secrets(self.model_dump(mode="json"))
