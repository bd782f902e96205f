"""FactoryRecipe: a recipe whose knowledge base a user's factory builds with a framework.

`factory` is a `_target_` spec: a callable that receives the benchmark's documents in the
framework's own document type (first argument) and the spec's other keys as keyword
arguments, and returns what the framework queries (a retriever, a query engine, a chain, a
pipeline). The recipe is checked when it is created, before any work: the framework must be
installed, the factory must take the spec's arguments, and the factory, called once on a
one-document probe, must return a type the bridge can query. Each failure is one line that
names the key and, for a missing package, the pip command.

Each build parses the raw sources with heta_eval's parser (`parser`, by media type), hands
their segments to the factory and wraps what it returns. Nothing is cached: a framework's
in-memory retriever cannot be saved by content, so every run builds it again.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from heta_eval.bridges.factory.extras import install_hint, installed_versions, require
from heta_eval.bridges.factory.knowledge_base import BuildFacts, FactoryKnowledgeBase
from heta_eval.bridges.factory.sources import (
    DOCUMENT_ID,
    SEGMENT_START,
    SOURCE_KEY,
    ParsedSources,
    SourceText,
    parse_sources,
)
from heta_eval.config.components import (
    ComponentError,
    check_argument_types,
    check_arguments,
    instantiate,
)
from heta_eval.config.secrets import mask_secrets
from heta_eval.kb.documents import RawSource
from heta_eval.kb.store import ObjectStore
from heta_eval.records import BenchmarkContents, BuildStep

DEFAULT_PARSER = {"_target_": "heta_eval.kb.MediaTypeParser"}
PROBE = SourceText(
    key="raw/probe/probe/probe.txt#0",
    text="A probe document. It checks what the factory returns before any work.",
    metadata={DOCUMENT_ID: "probe", SOURCE_KEY: "raw/probe/probe/probe.txt", SEGMENT_START: 0},
)


def plain(value: Any) -> Any:
    """Specs as plain dicts and lists (OmegaConf containers come in when Hydra builds)."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def target_of(spec: Mapping[str, Any]) -> str:
    """The spec's `_target_`."""
    return str(spec["_target_"])


class FactoryRecipe(ABC):
    """A recipe whose knowledge base a user's factory builds with a framework.

    A bridge names its framework (`framework`, `extra`), the distributions it needs
    (`requires`) and those whose versions it records when installed (`records`), converts
    our texts into the framework's documents (`to_documents`), says what kind of product a
    factory returned or why it cannot query it (`kind_of`), and wraps a product in its
    knowledge base (`knowledge_base`). `query_mode` names the recipe's one query mode.
    """

    framework: ClassVar[str]
    extra: ClassVar[str]
    requires: ClassVar[tuple[str, ...]]
    records: ClassVar[tuple[str, ...]] = ()
    answering_kinds: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        *,
        name: str,
        factory: Mapping[str, Any],
        parser: Mapping[str, Any] | None = None,
        query_mode: str | None = None,
        description: str | None = None,
    ) -> None:
        self.versions = require(
            f"recipe={self.extra} ({self.framework})", self.requires, install_hint(self.extra)
        )
        self.versions |= installed_versions(self.records)
        if not str(name).strip():
            raise ValueError("name must not be empty")
        self._name = str(name)
        self.description = description
        self.factory = plain(dict(factory)) if isinstance(factory, Mapping) else factory
        if not isinstance(self.factory, dict) or not str(self.factory.get("_target_", "")):
            raise ValueError(
                f"recipe.factory: expected a mapping with a _target_, got {factory!r:.80}"
            )
        self.parser = plain(dict(parser or DEFAULT_PARSER))
        self._query_modes = (str(query_mode or self.extra),)
        try:
            check_arguments(self.factory, "recipe.factory")
            check_argument_types(self.factory, "recipe.factory")
        except ComponentError as exc:
            raise ValueError(str(exc)) from None
        # What the factory returns decides how it is queried: checked now, not mid-run.
        self.kind = self._kind(self._build([PROBE]))
        self.answers = self.kind in self.answering_kinds

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r}, factory={target_of(self.factory)!r})"

    @property
    def name(self) -> str:
        return self._name

    @property
    def query_modes(self) -> tuple[str, ...]:
        return self._query_modes

    def manifest(self) -> dict[str, Any]:
        """The recipe as JSON-ready data (secrets masked), with the framework's versions."""
        return mask_secrets(
            {
                "_target_": f"{type(self).__module__}.{type(self).__qualname__}",
                "engine": self.extra,
                "engine_versions": self.versions,
                "name": self._name,
                "description": self.description,
                "query_modes": list(self._query_modes),
                "factory": self.factory,
                "parser": self.parser,
                "kind": self.kind,
                # Read by the runner: whether the recipe generates answers.
                "answerer": self.kind if self.answers else None,
                **self.settings(),
            }
        )

    def settings(self) -> dict[str, Any]:
        """The bridge's own settings, for the manifest."""
        return {}

    def check_contents(self, contents: BenchmarkContents) -> None:  # noqa: B027 (a default)
        """Nothing to check against the benchmark."""

    def content_digests(self) -> dict[str, str]:
        """No files read: nothing to add to the run's identity (the factory's module and
        arguments are in it through the configuration)."""
        return {}

    # -- what a bridge provides --------------------------------------------------------

    @abstractmethod
    def to_documents(self, texts: Sequence[SourceText]) -> list[Any]:
        """Our texts as the framework's documents, metadata and ids kept."""

    @abstractmethod
    def kind_of(self, product: Any) -> str:
        """What the factory returned (`retriever`, `query_engine`, ...); a TypeError that
        says what was expected when the bridge cannot query it."""

    @abstractmethod
    def knowledge_base(self, product: Any, *, kind: str, facts: BuildFacts) -> FactoryKnowledgeBase:
        """`product` wrapped as a knowledge base."""

    # -- building ------------------------------------------------------------------------

    def _build(self, texts: Sequence[SourceText]) -> Any:
        where = f"recipe.factory ({target_of(self.factory)})"
        try:
            create = instantiate(self.factory, _partial_=True)
        except ComponentError as exc:
            raise ValueError(f"recipe.factory: {exc}") from None
        try:
            return create(self.to_documents(texts))
        except ImportError as exc:
            raise ValueError(f"{where}: {exc}") from None
        except Exception as exc:
            if texts == [PROBE]:
                raise ValueError(
                    f"{where} failed on a one-document probe: {type(exc).__name__}: {exc}"
                ) from None
            raise

    def _kind(self, product: Any) -> str:
        try:
            return self.kind_of(product)
        except TypeError as exc:
            raise ValueError(
                f"recipe.factory: {target_of(self.factory)} returned "
                f"{type(product).__module__}.{type(product).__qualname__}; {exc}"
            ) from None

    def _built(self, parsed: ParsedSources) -> tuple[Any, float]:
        started = time.perf_counter()
        product = self._build(parsed.texts)
        self._kind(product)  # a factory that returns another type on real data
        return product, time.perf_counter() - started

    async def create_knowledge_base(
        self, *, name: str, store: ObjectStore, sources: Sequence[RawSource]
    ) -> FactoryKnowledgeBase:
        """Parse the sources, call the factory on their segments, wrap its product."""
        started = time.perf_counter()
        parser = instantiate(self.parser)
        parsed = await asyncio.to_thread(parse_sources, parser, store, sources)
        if not parsed.texts:
            raise ValueError(f"{name}: no document of this unit has text to give the factory")
        product, factory_seconds = await asyncio.to_thread(self._built, parsed)
        facts = BuildFacts(
            name=name,
            recipe_name=self._name,
            query_modes=self._query_modes,
            source_keys=tuple(s.key for s in sources),
            steps=(
                BuildStep(
                    name="parse",
                    component=target_of(self.parser),
                    seconds=parsed.seconds,
                    counts={"documents": parsed.documents, "segments": len(parsed.texts)},
                ),
                BuildStep(
                    name="factory",
                    component=target_of(self.factory),
                    seconds=factory_seconds,
                    counts={"framework_documents": len(parsed.texts)},
                ),
            ),
            counts={"documents": parsed.documents, "skipped_documents": len(parsed.errors)},
            build_seconds=time.perf_counter() - started,
            document_errors=parsed.errors,
        )
        return self.knowledge_base(product, kind=self.kind, facts=facts)
