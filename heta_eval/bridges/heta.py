"""Bridge to the Heta Framework (`pip install heta-framework`): its recipes, run unchanged.

`HetaRecipe` is a `RecipeLike` whose stores, parsers, models and steps are `_target_` specs
of Heta's own classes (`heta_framework.kb.ParseDocuments`, `...InMemoryTextIndexStore`, ...).
Each build instantiates them afresh, copies the raw documents from heta_eval's object store
into Heta's object store under the *same* raw keys (`raw/benchmarks/{b}/{split}/{doc}/{name}`),
runs Heta's `KnowledgeBase.create` and wraps the result in a `HetaKnowledgeBase`, whose
`query` calls Heta's `kb.query` and converts the answer into heta_eval's `QueryResponse`.

Offline tokenizer: Heta's `ParseDocuments` counts tokens with `tiktoken.get_encoding(
"cl100k_base")`, which downloads the encoding (no timeout) unless it is in tiktoken's cache,
and retries for every document when that fails. Before building, the bridge loads the
encodings the recipe needs from a local copy (TIKTOKEN_CACHE_DIR, DATA_GYM_CACHE_DIR,
tiktoken's default cache, or the copy bundled with `litellm`, a dependency of Heta) into
tiktoken's in-process registry, so Heta never reaches for the network. When no local copy
exists and `allow_network` is false, token counts fall back to Heta's own word count for the
build, and a tiktoken split encoding that is not available locally is refused up front.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import inspect
import logging
import os
import re
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from heta_eval.config.components import instantiate
from heta_eval.config.secrets import mask_secrets
from heta_eval.kb.documents import RawSource
from heta_eval.kb.store import ObjectStore
from heta_eval.protocols import BaseKnowledgeBase, BaseRecipe
from heta_eval.records import (
    BuildStep,
    KnowledgeBaseManifest,
    QueryResponse,
    QueryResult,
    SourceRef,
)

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'heta-eval[heta]'"
_STORE_KINDS = ("objects", "vector", "sql", "graph", "text_index")
_MODEL_KINDS = ("language", "embedding", "reranker")
_PARSER_KINDS = ("documents",)
_RAW_KEY = re.compile(r"^raw/benchmarks/[^/]+/[^/]+/(?P<document_id>.+)/[^/]+$")

# tiktoken caches a downloaded encoding under sha1(blob URL); these are the file names of the
# encodings published at openaipublic.blob.core.windows.net/encodings/{name}.tiktoken.
_TIKTOKEN_CACHE_FILES = {
    name: hashlib.sha1(
        f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken".encode()
    ).hexdigest()
    for name in ("cl100k_base", "o200k_base", "p50k_base", "r50k_base")
}
_TIKTOKEN_LOCK = threading.Lock()
_PATCH_LOCK = threading.Lock()
_patch_depth = 0


class HetaNotInstalledError(ImportError):
    """heta-framework is not installed."""


def _require_heta() -> str:
    """The installed heta-framework version; a clear error when it is missing."""
    try:
        found = importlib.util.find_spec("heta_framework") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise HetaNotInstalledError(
            f"the Heta bridge needs the heta-framework package: {INSTALL_HINT}"
        )
    try:
        return metadata.version("heta-framework")
    except metadata.PackageNotFoundError:  # pragma: no cover - vendored copy
        return "unknown"


def _plain(value: Any) -> Any:
    """Specs as plain dicts/lists (OmegaConf containers come in when built by Hydra)."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(value, DictConfig | ListConfig):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _build(spec: Any, where: str) -> Any:
    if isinstance(spec, Mapping) and "_target_" in spec:
        return instantiate(spec)
    raise ValueError(f"{where}: expected a mapping with a _target_, got {spec!r:.80}")


def _group(specs: Mapping[str, Any], kinds: Sequence[str], where: str) -> dict[str, Any]:
    """Instantiate one Heta component group (`stores`, `parsers`, `models`)."""
    unknown = sorted(set(specs) - {*kinds, "named"})
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown}; allowed: {[*kinds, 'named']}")
    created: dict[str, Any] = {
        kind: _build(spec, f"{where}.{kind}") for kind, spec in specs.items() if kind != "named"
    }
    named = specs.get("named") or {}
    created["named"] = {k: _build(v, f"{where}.named.{k}") for k, v in named.items()}
    return created


def _encoding_names(spec: Any) -> set[str]:
    """Every `encoding_name` in the step specs (SplitDocuments' tokenizer)."""
    found: set[str] = set()
    if isinstance(spec, Mapping):
        for key, value in spec.items():
            if key == "encoding_name" and isinstance(value, str):
                found.add(value)
            else:
                found |= _encoding_names(value)
    elif isinstance(spec, list | tuple):
        for item in spec:
            found |= _encoding_names(item)
    return found


def _tiktoken_cache_dirs() -> list[Path]:
    """Where a local copy of a tiktoken encoding may be, in the order tiktoken would look."""
    dirs = [os.environ.get("TIKTOKEN_CACHE_DIR"), os.environ.get("DATA_GYM_CACHE_DIR")]
    dirs.append(os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    spec = importlib.util.find_spec("litellm")  # does not import litellm
    if spec is not None and spec.origin:
        dirs.append(str(Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"))
    return [Path(d) for d in dirs if d]


@contextlib.contextmanager
def _environ(key: str, value: str) -> Iterator[None]:
    old = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


def preload_tiktoken(names: set[str]) -> dict[str, str]:
    """Load tiktoken encodings from local copies only; returns where each came from.

    A loaded encoding stays in tiktoken's in-process registry, so later
    `tiktoken.get_encoding(name)` calls (Heta's) neither download nor stall.
    """
    import tiktoken.registry

    status: dict[str, str] = {}
    with _TIKTOKEN_LOCK:
        for name in sorted(names):
            if name in tiktoken.registry.ENCODINGS:
                status[name] = "in-process"
                continue
            status[name] = "unavailable offline"
            filename = _TIKTOKEN_CACHE_FILES.get(name)
            if filename is None:
                continue
            for directory in _tiktoken_cache_dirs():
                if not (directory / filename).is_file():
                    continue
                try:
                    with _environ("TIKTOKEN_CACHE_DIR", str(directory)):
                        tiktoken.get_encoding(name)
                except Exception as exc:  # a corrupt copy: try the next one
                    log.debug("tiktoken %s from %s failed: %s", name, directory, exc)
                    continue
                status[name] = str(directory)
                break
    return status


@contextlib.contextmanager
def _word_count_token_counts() -> Iterator[None]:
    """While active, Heta's ParseDocuments counts words (its own fallback), not tiktoken."""
    global _patch_depth
    from heta_framework.kb.steps import parse

    with _PATCH_LOCK:
        if _patch_depth == 0:
            parse._heta_eval_original_count = parse._token_count_for_text  # type: ignore[attr-defined]
            parse._token_count_for_text = lambda text: len(text.split())
        _patch_depth += 1
    try:
        yield
    finally:
        with _PATCH_LOCK:
            _patch_depth -= 1
            if _patch_depth == 0:
                parse._token_count_for_text = parse._heta_eval_original_count  # type: ignore[attr-defined]


def _heta_kb_name(name: str) -> str:
    """A name Heta accepts: letters, digits, space, `_`, `-`; at most 80 characters."""
    clean = re.sub(r"[^\w \-]+", "_", name, flags=re.UNICODE).strip() or "kb"
    if len(clean) <= 80:
        return clean
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:10]
    return f"{clean[:69].rstrip(' -_')}-{digest}"


def _seconds(started: str | None, finished: str | None) -> float:
    if not started or not finished:
        return 0.0
    try:
        delta = datetime.fromisoformat(finished) - datetime.fromisoformat(started)
    except ValueError:
        return 0.0
    return max(delta.total_seconds(), 0.0)


def _artifact_counts(name: str, value: Any) -> dict[str, int]:
    """Integer counts a Heta artifact carries: ints as they are, collections by length, and
    a result dataclass (e.g. `SplitDocumentsResult`) by its fields."""
    if isinstance(value, bool):
        return {}
    if isinstance(value, int):
        return {name: value}
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        return {name: len(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        counts: dict[str, int] = {}
        for item in dataclasses.fields(value):
            counts.update(_artifact_counts(item.name, getattr(value, item.name)))
        return counts
    return {}


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_json_safe(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _json_safe(dataclasses.asdict(value))
    return str(value)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def document_id_from_raw_key(key: str) -> str | None:
    """`{document_id}` of a raw key `raw/benchmarks/{benchmark}/{split}/{document_id}/{name}`."""
    match = _RAW_KEY.match(key)
    return match.group("document_id") if match else None


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
        self.heta_version = _require_heta()
        if not str(name).strip():
            raise ValueError("name must not be empty")
        self._name = str(name)
        self.description = description
        self.steps = _plain(list(steps))
        if not self.steps:
            raise ValueError("steps: a Heta recipe needs at least one step")
        self.stores = _plain(dict(stores or {}))
        self.parsers = _plain(dict(parsers or {}))
        self.models = _plain(dict(models or {}))
        self.metadata = {str(k): str(v) for k, v in _plain(dict(metadata or {})).items()}
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
        stores = _group(self.stores, _STORE_KINDS, "stores")
        if "objects" not in stores and placeholder_objects:
            from heta_framework.common.stores.object import LocalObjectStore

            stores["objects"] = LocalObjectStore(tempfile.gettempdir())  # never written
        return {
            "stores": stores,
            "parsers": _group(self.parsers, _PARSER_KINDS, "parsers"),
            "models": _group(self.models, _MODEL_KINDS, "models"),
            "steps": [_build(s, f"steps[{i}]") for i, s in enumerate(self.steps)],
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

    @contextlib.contextmanager
    def _offline_tokenizer(self) -> Iterator[dict[str, str]]:
        split_encodings = _encoding_names(self.steps) - {"unicode"}
        status = preload_tiktoken({"cl100k_base", *split_encodings})
        missing = [n for n in split_encodings if status[n] == "unavailable offline"]
        if missing and not self.allow_network:
            raise RuntimeError(
                f"tiktoken encoding(s) {missing} used by a split step are not available "
                "offline; use encoding_name: unicode, put the encoding in TIKTOKEN_CACHE_DIR, "
                "or set allow_network: true"
            )
        if status["cl100k_base"] == "unavailable offline" and not self.allow_network:
            log.warning(
                "tiktoken cl100k_base is not available offline: Heta's document token "
                "counts fall back to word counts"
            )
            with _word_count_token_counts():
                yield status
        else:
            yield status

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
            with self._offline_tokenizer() as tokenizer:
                created = KnowledgeBase.create(
                    recipe=recipe,
                    name=_heta_kb_name(name),
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
            recipe=self,
            name=name,
            sources=sources,
            build_seconds=time.perf_counter() - clock,
            heta_build_seconds=heta_seconds,
            tokenizer=tokenizer,
            workdir=None if self.keep_workdir else workdir,
        )


class HetaKnowledgeBase(BaseKnowledgeBase):
    """A built Heta knowledge base behind heta_eval's `KnowledgeBaseLike`."""

    def __init__(
        self,
        kb: Any,
        *,
        recipe: HetaRecipe,
        name: str,
        sources: Sequence[RawSource],
        build_seconds: float,
        heta_build_seconds: float,
        tokenizer: Mapping[str, str],
        workdir: str | None = None,
    ) -> None:
        self.heta_kb = kb
        self.recipe = recipe
        self.name = name
        self.sources = tuple(sources)
        self.build_seconds = build_seconds
        self.heta_build_seconds = heta_build_seconds
        self.tokenizer = dict(tokenizer)
        self.workdir = workdir
        self._document_ids = {s.key: s.document_id for s in sources}
        # Heta parses identical bytes once (content-addressed), crediting the first raw key;
        # results say which other documents carry the same content.
        by_digest: dict[str, list[str]] = {}
        for s in sources:
            if s.sha256:
                by_digest.setdefault(s.sha256, []).append(s.document_id)
        self._same_content = {
            doc: [d for d in docs if d != doc]
            for docs in by_digest.values()
            if len(docs) > 1
            for doc in docs
        }
        if workdir is not None:
            weakref.finalize(self, shutil.rmtree, workdir, True)
        self._unicode_offsets = _encoding_names(recipe.steps) == {"unicode"}

    def manifest(self) -> KnowledgeBaseManifest:
        record = self.heta_kb.run_record
        artifacts = record.artifacts
        steps = []
        for step in record.step_records:
            counts: dict[str, int] = {}
            for artifact in step.output_artifacts:
                if artifact in artifacts:
                    found = _artifact_counts(artifact, artifacts[artifact])
                    counts.update({k: v for k, v in found.items() if k not in counts})
            steps.append(
                BuildStep(
                    name=step.step_name,
                    component=f"heta_framework:{step.step_type}",
                    seconds=_seconds(step.started_at, step.finished_at),
                    counts=counts,
                )
            )
        counts = {"documents": len(self.sources)}
        for label, artifact in (
            ("parsed_documents", "parsed_document_keys"),
            ("chunks", "chunk_keys"),
        ):
            if artifact in artifacts:
                counts[label] = len(set(artifacts[artifact]))
        parse_result = artifacts.get("parse_documents_result")
        skipped = tuple(getattr(parse_result, "skipped_keys", ()) or ())
        counts["skipped_documents"] = len(skipped)
        return KnowledgeBaseManifest(
            name=self.name,
            recipe_name=self.recipe.name,
            query_modes=self.recipe.query_modes,
            source_keys=tuple(s.key for s in self.sources),
            steps=tuple(steps),
            counts=counts,
            build_seconds=self.build_seconds,
            document_errors={
                self._document_id(key) or key: "skipped by Heta ParseDocuments: no parser "
                "for this file type"
                for key in skipped
            },
        )

    def _document_id(self, key: str | None) -> str | None:
        if not key:
            return None
        return self._document_ids.get(key) or document_id_from_raw_key(key)

    async def query(
        self, text: str, *, mode: str, top_k: int = 10, options: Mapping[str, Any] | None = None
    ) -> QueryResponse:
        """Heta's `kb.query`, converted: ranked results with provenance, answer, citations."""
        if mode not in self.recipe.query_modes:
            raise ValueError(
                f"query mode {mode!r} is not offered by recipe {self.recipe.name!r}; "
                f"allowed: {list(self.recipe.query_modes)}"
            )
        if not text.strip():
            return QueryResponse(query=text, mode=mode)
        answered = self.heta_kb.query(text, mode=mode, top_k=top_k, options=dict(options or {}))
        response = await answered if inspect.isawaitable(answered) else answered
        results = tuple(self._result(item, rank) for rank, item in enumerate(response.results))
        citations = tuple(
            dict.fromkeys(c.result_id or c.id for c in getattr(response, "citations", ()))
        )
        trace = {
            "engine": "heta-framework",
            "engine_version": self.recipe.heta_version,
            "heta_mode": response.mode,
            "metadata": _json_safe(getattr(response, "metadata", {})),
        }
        events = getattr(response, "trace", ())
        if events:
            trace["events"] = _json_safe(list(events))
        return QueryResponse(
            query=text,
            mode=mode,
            results=results,
            answer=getattr(response, "answer", None),
            citations=citations,
            trace=trace,
        )

    def _result(self, item: Any, rank: int) -> QueryResult:
        source = dict(item.source or {})
        extra = dict(item.metadata or {})
        keys = [
            source.get("object_key"),
            extra.get("source_key"),
            *(source.get("object_keys") or source.get("source_keys") or ()),
        ]
        key = next((str(k) for k in keys if k), None)
        heta_document_id = source.get("document_id") or extra.get("document_id")
        document_id = self._document_id(key) or heta_document_id or str(item.id)
        chunk_ids = tuple(source.get("chunk_ids") or ())
        chunk_id = str(item.id) if item.kind == "chunk" else (chunk_ids[0] if chunk_ids else None)
        token_start = _int_or_none(source.get("token_start", extra.get("token_start")))
        token_end = _int_or_none(source.get("token_end", extra.get("token_end")))
        meta = {
            "heta_kind": item.kind,
            "heta_document_id": heta_document_id,
            "token_start": token_start,
            "token_end": token_end,
            "chunk_ids": list(chunk_ids) if len(chunk_ids) > 1 else None,
            "heading_path": extra.get("heading_path") or None,
            "retrieval_method": extra.get("retrieval_method"),
            "ranking": extra.get("ranking"),
            "origin": source.get("origin"),
            "same_content_document_ids": self._same_content.get(document_id),
        }
        score = item.score if item.score is not None else 1.0 / (rank + 1)
        return QueryResult(
            id=str(item.id),
            text=item.text,
            score=float(score),
            kind="chunk" if item.kind == "chunk" else str(item.kind),
            source=SourceRef(
                source_key=key or f"heta:{item.kind}/{item.id}",
                document_id=document_id,
                chunk_id=chunk_id,
                chunk_index=_int_or_none(source.get("chunk_index")),
                # With the `unicode` split encoding a token is a code point: token offsets
                # are character offsets of the (unstripped) window in the page text.
                start_char=token_start if self._unicode_offsets else None,
                end_char=token_end if self._unicode_offsets else None,
                page_index=_int_or_none(source.get("page_index")),
                metadata=_json_safe({k: v for k, v in meta.items() if v is not None}),
            ),
        )
