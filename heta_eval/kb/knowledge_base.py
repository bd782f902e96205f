"""KnowledgeBase: built from raw objects by a recipe, then queried by mode."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heta_eval.kb.chunk_file import ChunkFile, ChunkFileWriter
from heta_eval.kb.documents import Chunk, RawSource
from heta_eval.kb.index.base import Hits, SearchIndex
from heta_eval.kb.store import ObjectStore
from heta_eval.progress import NO_PROGRESS, StageReporter
from heta_eval.protocols import BaseKnowledgeBase, BuildPlan, missing_members
from heta_eval.records import (
    BuildStep,
    KnowledgeBaseManifest,
    QueryResponse,
    QueryResult,
    SourceRef,
)

if TYPE_CHECKING:  # created by the recipe; their modules import the endpoint client
    from heta_eval.kb.answering import Answerer
    from heta_eval.kb.rerank import Reranker

BUILD_BATCH_DOCUMENTS = 2048
"""Documents parsed, chunked and tokenised together during a build (bounds its memory)."""


class UnknownQueryModeError(ValueError):
    """A query mode the knowledge base's recipe does not offer."""


class EmptyKnowledgeBaseError(ValueError):
    """No source gave a chunk to index: every case of the unit would score 0 against an
    empty knowledge base, so the build fails (and nothing is cached)."""

    def __init__(self, sources: int, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        if not sources:
            message = "nothing to index: the unit has no documents"
        else:
            reasons = Counter(why.partition(":")[0] for why in errors.values())
            shown = "; ".join(f"{n}x {why}" for why, n in reasons.most_common(3))
            example = next(iter(errors.values()), "")
            message = f"nothing indexed: none of the {sources} documents gave any text to index" + (
                f" ({shown}; e.g. {example})" if errors else ""
            )
        super().__init__(message[:1500])


class KnowledgeBase(BaseKnowledgeBase):
    """An intermediate build product: chunks of the raw sources and one index per query mode.

    Create it with `await KnowledgeBase.create(recipe=..., name=..., store=..., sources=...)`.
    A source that cannot be read or parsed is recorded in `manifest().document_errors` and
    the build goes on with the others; when no source gives a chunk, the build raises
    EmptyKnowledgeBaseError.
    """

    def __init__(
        self,
        *,
        name: str,
        recipe: BuildPlan,
        chunks: Sequence[Chunk],
        indexes: Mapping[str, SearchIndex],
        manifest: KnowledgeBaseManifest,
    ) -> None:
        self.name = name
        self.recipe = recipe
        # A ChunkFile (a build's, or the build cache's chunks.jsonl) reads chunks from disk by
        # position; any other sequence is kept as given.
        self._chunks: Sequence[Chunk] = chunks if isinstance(chunks, ChunkFile) else tuple(chunks)
        self._indexes = dict(indexes)
        self._manifest = manifest
        self._fields: list[dict[str, Any] | None] = [None] * len(self._chunks)
        self._fusions = recipe.create_fusions()
        self._reranker = recipe.create_reranker()
        self._answerer = recipe.create_answerer()

    @classmethod
    async def create(
        cls,
        *,
        recipe: BuildPlan,
        name: str,
        store: ObjectStore,
        sources: Sequence[RawSource],
        progress: StageReporter = NO_PROGRESS,
    ) -> KnowledgeBase:
        """Build a knowledge base from `sources` (keys in `store`) following `recipe`;
        `progress` shows its parse, chunk and index stages."""
        return await asyncio.to_thread(cls._build, recipe, name, store, sources, progress)

    @classmethod
    def _build(
        cls,
        recipe: BuildPlan,
        name: str,
        store: ObjectStore,
        sources: Sequence[RawSource],
        progress: StageReporter = NO_PROGRESS,
        batch_size: int | None = None,
    ) -> KnowledgeBase:
        """Parse, chunk and index `sources` in batches of `batch_size` documents (default
        BUILD_BATCH_DOCUMENTS): chunks go to a chunk file and to the index builders that take
        batches (`builder.start()`) as they are made; no list of every document or chunk is
        held. Builders that start nothing index the chunk file once it is complete."""
        started = time.perf_counter()
        size = batch_size or BUILD_BATCH_DOCUMENTS
        errors: dict[str, str] = {}
        parser = recipe.create_parser()
        chunker = recipe.create_chunker()
        builders = recipe.create_index_builders()
        streaming = {m: a for m, b in builders.items() if (a := b.start()) is not None}
        seconds = {"parse": 0.0, "chunk": 0.0, **{m: 0.0 for m in builders}}
        parsed = 0
        # Gathered as the sources are read (a sequence of sources may make them when read).
        source_keys: list[str] = []
        writer = ChunkFileWriter()
        chunks: ChunkFile | None = None
        try:
            with (
                progress.stage("parse", len(sources), "documents") as parse_stage,
                progress.stage("chunk", len(sources), "documents") as chunk_stage,
            ):
                for first in range(0, len(sources), size):
                    t0 = time.perf_counter()
                    items = []
                    for source in sources[first : first + size]:
                        parse_stage.advance()
                        source_keys.append(source.key)
                        try:
                            item = parser.parse(source, store.get(source.key))
                        except Exception as exc:
                            errors[source.key] = f"{type(exc).__name__}: {exc}"
                            continue
                        if not item.text.strip():
                            # Nothing to index; said here so an empty file is not silently
                            # unretrievable.
                            errors[source.key] = "EmptyDocument: no text after parsing"
                            continue
                        items.append(item)
                    t1 = time.perf_counter()
                    batch: list[Chunk] = []
                    for item in items:
                        batch.extend(chunker.chunk(item))
                    chunk_stage.advance(min(size, len(sources) - first))
                    parsed += len(items)
                    del items
                    writer.add(batch)
                    t2 = time.perf_counter()
                    seconds["parse"] += t1 - t0
                    seconds["chunk"] += t2 - t1
                    for mode, accumulator in streaming.items():
                        t0 = time.perf_counter()
                        accumulator.add(chunk.text for chunk in batch)
                        seconds[mode] += time.perf_counter() - t0
                    del batch
            chunks = writer.finish()
            steps = [
                BuildStep(
                    name="parse",
                    component=recipe.parser["_target_"],
                    seconds=seconds["parse"],
                    counts={"sources": len(sources), "parsed": parsed, "failed": len(errors)},
                ),
                BuildStep(
                    name="chunk",
                    component=recipe.chunker["_target_"],
                    seconds=seconds["chunk"],
                    counts={"chunks": len(chunks)},
                ),
            ]
            if not len(chunks):
                raise EmptyKnowledgeBaseError(len(sources), errors)
            indexes: dict[str, SearchIndex] = {}
            for mode, builder in builders.items():
                t0 = time.perf_counter()
                with progress.stage(f"index {mode}", len(chunks), "chunks") as stage:
                    if mode in streaming:
                        index = streaming.pop(mode).finish()
                    else:
                        index = builder.build(chunks)
                    indexes[mode] = checked_index(mode, index)
                    stage.advance(len(chunks))
                steps.append(
                    BuildStep(
                        name=f"index:{mode}",
                        component=recipe.indexes[mode]["_target_"],
                        seconds=seconds[mode] + time.perf_counter() - t0,
                        counts={"chunks": len(chunks)},
                    )
                )
        except BaseException:
            if chunks is not None:
                chunks.close()
            else:
                writer.discard()
            raise

        manifest = KnowledgeBaseManifest(
            name=name,
            recipe_name=recipe.name,
            query_modes=recipe.query_modes,
            source_keys=tuple(source_keys),
            steps=tuple(steps),
            counts={
                "sources": len(sources),
                "documents": parsed,
                "chunks": len(chunks),
                "document_errors": len(errors),
            },
            build_seconds=time.perf_counter() - started,
            document_errors=errors,
        )
        return cls(name=name, recipe=recipe, chunks=chunks, indexes=indexes, manifest=manifest)

    def persistable(self) -> bool:
        """Whether every index can be saved and loaded (a condition for the build cache)."""
        return all(index.persistent for index in self._indexes.values())

    def save(self, directory: Path) -> None:
        """Write chunks, indexes and manifest under `directory` (see `load`)."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "manifest.json").write_text(
            self._manifest.model_dump_json(indent=1), encoding="utf-8"
        )
        if isinstance(self._chunks, ChunkFile):
            self._chunks.copy_to(directory / "chunks.jsonl")
        else:
            with (directory / "chunks.jsonl").open("w", encoding="utf-8") as handle:
                for chunk in self._chunks:
                    handle.write(chunk.model_dump_json() + "\n")
        for mode, index in self._indexes.items():
            index.save(directory / "indexes" / mode)

    @classmethod
    def load(cls, directory: Path, *, recipe: BuildPlan, name: str) -> KnowledgeBase:
        """A knowledge base written by `save`, its indexes loaded by the recipe's builders."""
        manifest = KnowledgeBaseManifest.model_validate_json(
            (directory / "manifest.json").read_text(encoding="utf-8")
        )
        # Chunks are read from the file when a query returns them (the entry's checksums were
        # verified before loading); indexes that can be memory-mapped are (BM25).
        chunks = ChunkFile.open(directory / "chunks.jsonl")
        try:
            if len(chunks) != manifest.counts.get("chunks", len(chunks)):
                raise ValueError("chunk count differs from the manifest")
            builders = recipe.create_index_builders()
            indexes = {mode: builders[mode].load(directory / "indexes" / mode) for mode in builders}
        except BaseException:
            chunks.close()
            raise
        manifest = manifest.model_copy(update={"name": name})
        return cls(name=name, recipe=recipe, chunks=chunks, indexes=indexes, manifest=manifest)

    def mark_cached(self, key: str, status: str, load_seconds: float | None) -> None:
        """Record in the manifest whether this knowledge base came from the build cache."""
        self._manifest = self._manifest.model_copy(
            update={"cache_key": key, "cache_status": status, "load_seconds": load_seconds}
        )

    def manifest(self) -> KnowledgeBaseManifest:
        """What was built: steps, counts, build seconds and document errors."""
        return self._manifest

    @property
    def query_modes(self) -> tuple[str, ...]:
        """The query modes this knowledge base answers."""
        return self.recipe.query_modes

    def _search(self, texts: list[str], mode: str, top_k: int) -> list[Hits]:
        if mode in self._indexes:
            return self._indexes[mode].search(texts, top_k)
        if mode in self._fusions:
            fusion = self._fusions[mode]
            depth = max(top_k, fusion.depth)
            rankings = {m: self._indexes[m].search(texts, depth) for m in fusion.modes}
            return [
                fusion.fuse({m: rankings[m][i] for m in fusion.modes}, top_k)
                for i in range(len(texts))
            ]
        raise UnknownQueryModeError(
            f"query mode {mode!r} is not offered by recipe {self.recipe.name!r}; "
            f"available: {list(self.recipe.query_modes)}"
        )

    def _result_fields(self, position: int) -> dict[str, Any]:
        """The fields of a query result for the chunk at `position`, except its score; made
        once per chunk (its provenance is validated, frozen, so shared)."""
        fields = self._fields[position]
        if fields is None:
            chunk = self._chunks[position]
            source = SourceRef(
                source_key=chunk.source_key,
                document_id=chunk.document_id,
                chunk_id=chunk.chunk_id,
                chunk_index=chunk.chunk_index,
                start_char=chunk.start_char,
                end_char=chunk.end_char,
                **{k: v for k, v in chunk.locator.items() if k in _LOCATOR_FIELDS},
            )
            fields = {"id": chunk.chunk_id, "text": chunk.text, "kind": "chunk", "source": source}
            self._fields[position] = fields
        return fields

    def _response(self, text: str, mode: str, hits: Hits, seconds: float) -> QueryResponse:
        # Every field but the score comes from a chunk read from the chunk file and its
        # SourceRef (made once per chunk and shared); pydantic-core validates the result
        # from them in less time than `model_construct` takes to assemble it in Python
        # (1.2-2.0 us against 2.6-3.5 us a result, 2026-12-03; a million at 1M x 10k).
        fields = self._result_fields
        results = tuple(
            QueryResult(**fields(position), score=float(score)) for position, score in hits
        )
        return QueryResponse(
            query=text,
            mode=mode,
            results=results,
            trace={"retrieval_seconds": seconds, "candidates": len(hits)},
        )

    def exact_in_batches(self, mode: str) -> bool:
        """Whether `query_many` gives each query of `mode` the response `query` gives it
        alone (the same hits, scores and tie order): the mode's index says so (BM25) and no
        reranker or answerer follows the retrieval."""
        index = self._indexes.get(mode)
        return (
            self._reranker is None
            and self._answerer is None
            and index is not None
            and index.exact_in_batches
        )

    async def query(
        self, text: str, *, mode: str, top_k: int = 10, options: Mapping[str, Any] | None = None
    ) -> QueryResponse:
        """Rank this knowledge base's chunks for `text` with query mode `mode`."""
        return (await self.query_many([text], mode=mode, top_k=top_k, options=options))[0]

    async def query_many(
        self,
        texts: Sequence[str],
        *,
        mode: str,
        top_k: int = 10,
        options: Mapping[str, Any] | None = None,
    ) -> list[QueryResponse]:
        """Rank for several queries at once (one vectorised call into the index)."""
        if top_k <= 0:
            raise ValueError(f"top_k must be a positive integer, got {top_k}")
        started = time.perf_counter()
        hits = self._search(list(texts), mode, top_k)
        seconds = (time.perf_counter() - started) / max(len(texts), 1)
        responses = [self._response(t, mode, h, seconds) for t, h in zip(texts, hits, strict=True)]
        return await rerank_and_answer(responses, self._reranker, self._answerer)

    async def aclose(self) -> None:
        """Release connections held by the reranker or answerer (endpoints)."""
        await close_parts(self._reranker, self._answerer)


def checked_index(mode: str, index: SearchIndex) -> SearchIndex:
    """`index` if it follows the SearchIndex protocol, else a TypeError saying what it lacks."""
    missing = missing_members(index, SearchIndex)
    if missing:
        raise TypeError(
            f"index {mode!r}: {type(index).__qualname__} lacks {missing} of the search index "
            "protocol (heta_eval.kb.index.base.SearchIndex; subclass BaseSearchIndex for the "
            "defaults of exact_in_batches, persistent and save)"
        )
    return index


async def rerank_and_answer(
    responses: list[QueryResponse], reranker: Reranker | None, answerer: Answerer | None
) -> list[QueryResponse]:
    """`responses` reranked by `reranker` and answered by `answerer` (each optional)."""
    if reranker is not None:
        responses = [
            r.model_copy(
                update={
                    "results": tuple(await reranker.rerank(r.query, r.results)),
                    "trace": {**r.trace, "reranked": True},
                }
            )
            for r in responses
        ]
    if answerer is None:
        return responses
    answered = []
    for response in responses:
        answer, citations = await answerer.answer(response.query, response.results)
        answered.append(response.model_copy(update={"answer": answer, "citations": citations}))
    return answered


async def close_parts(reranker: Reranker | None, answerer: Answerer | None) -> None:
    """Release what the reranker and the answerer hold (an endpoint's connections)."""
    for part in (reranker, answerer):
        if part is not None:
            await part.aclose()


_LOCATOR_FIELDS = frozenset({"page_index", "table_id", "row_index", "column"})
