"""A knowledge base whose corpus is split into shards, each built and queried where it lives.

`CorpusShard` holds one shard: it parses and chunks its documents, tokenises its chunks
(pass 1: the terms' document frequencies and the chunks' lengths), builds its BM25 score
matrices from the whole corpus's statistics (pass 2) and answers queries with its best
chunks. It runs in a Ray actor (`heta_eval.run.shards`) or, one after another, in this
process. `ShardedKnowledgeBase` is the driver's side: it merges the statistics, tokenises
queries against the whole corpus's vocabulary, asks every shard and merges their best
chunks, so its results equal an unsharded `KnowledgeBase`'s (see
`heta_eval.kb.index.sharded_bm25`). Sharded knowledge bases are not put in the build cache:
each run builds its shards.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from heta_eval.kb.documents import Chunk, RawSource
from heta_eval.kb.index.sharded_bm25 import (
    CorpusTerms,
    QueryTokenizer,
    ShardBm25,
    ShardingError,
    ShardTerms,
    check_shardable_bm25,
    merge_hits,
)
from heta_eval.kb.knowledge_base import (
    _LOCATOR_FIELDS,
    EmptyKnowledgeBaseError,
    UnknownQueryModeError,
    close_parts,
    rerank_and_answer,
)
from heta_eval.kb.store import ObjectStore
from heta_eval.progress import NO_PROGRESS, StageReporter
from heta_eval.protocols import BaseKnowledgeBase, BuildPlan, RecipeLike
from heta_eval.records import BuildStep, KnowledgeBaseManifest, QueryResponse, SourceRef

BM25_TARGETS = (
    "heta_eval.kb.BM25Index",
    "heta_eval.kb.index.BM25Index",
    "heta_eval.kb.index.bm25.BM25Index",
)

# Documents sent to a shard per call: the sources of a 10M-document corpus are not sent at once.
SOURCE_BATCH = 20_000


def check_shardable(recipe: RecipeLike | BuildPlan) -> BuildPlan:
    """`recipe` if every one of its query modes is a BM25 index that can be split into shards
    with exact results (no dense index, no fusion), else ShardingError."""
    if not isinstance(recipe, BuildPlan):
        raise ShardingError(
            f"runner.shards: recipe {recipe.name!r} is a "
            f"{type(recipe).__name__}; sharding needs a KnowledgeRecipe whose indexes are "
            "all BM25 (heta_eval.kb.BM25Index), e.g. recipe=bm25"
        )
    for mode, spec in recipe.indexes.items():
        target = str(spec.get("_target_", ""))
        if target not in BM25_TARGETS:  # refused before creating it (a dense model's load)
            raise ShardingError(
                f"runner.shards: recipe.indexes.{mode} is {target}; only BM25 indexes "
                "(heta_eval.kb.BM25Index) can be split into shards: use a bm25 recipe or "
                "runner.shards=null"
            )
    for mode, builder in recipe.create_index_builders().items():
        check_shardable_bm25(builder, f"recipe.indexes.{mode}")
    if recipe.fusions:
        raise ShardingError(
            f"runner.shards: recipe {recipe.name!r} has fusions "
            f"{sorted(recipe.fusions)}; sharding supports recipes whose query modes are "
            "all BM25 indexes (recipe=bm25), not fused rankings"
        )
    return recipe


@dataclass
class ShardReport:
    """What pass 1 of a shard found: per query mode its terms, and its parse counts."""

    terms: dict[str, ShardTerms]
    documents: int
    chunks: int
    errors: dict[str, str]
    seconds: dict[str, float] = field(default_factory=dict)


class CorpusShard:
    """One shard of a corpus: its documents parsed and chunked, its BM25 indexes, its
    queries. Create it with the recipe and store, send it its sources with `add_sources`
    (in batches), then `tokenize` (pass 1) and `index` (pass 2)."""

    def __init__(self, recipe: BuildPlan, store: ObjectStore) -> None:
        self.recipe = recipe
        self.store = store
        self._parser = recipe.create_parser()
        self._chunker = recipe.create_chunker()
        self._chunks: list[ChunkFields] = []  # plain tuples: a fraction of a Chunk's memory
        self._errors: dict[str, str] = {}
        self._documents = 0
        self._seconds = {"parse": 0.0, "chunk": 0.0}
        self._indexes = {
            mode: ShardBm25(check_shardable_bm25(builder, f"recipe.indexes.{mode}"))
            for mode, builder in recipe.create_index_builders().items()
        }

    def add_sources(self, sources: Sequence[RawSource]) -> int:
        """Parse and chunk `sources` (as `KnowledgeBase` does: a source that cannot be read
        or parsed, or has no text, is a document error); the shard's chunk count."""
        for source in sources:
            t0 = time.perf_counter()
            try:
                item = self._parser.parse(source, self.store.get(source.key))
            except Exception as exc:
                self._errors[source.key] = f"{type(exc).__name__}: {exc}"
                continue
            finally:
                self._seconds["parse"] += time.perf_counter() - t0
            if not item.text.strip():
                self._errors[source.key] = "EmptyDocument: no text after parsing"
                continue
            self._documents += 1
            t0 = time.perf_counter()
            self._chunks.extend(chunk_fields(c) for c in self._chunker.chunk(item))
            self._seconds["chunk"] += time.perf_counter() - t0
        return len(self._chunks)

    def tokenize(self) -> ShardReport:
        """Pass 1: tokenise the chunks for every BM25 index."""
        texts = [chunk[1] for chunk in self._chunks]
        terms = {}
        for mode, index in self._indexes.items():
            t0 = time.perf_counter()
            terms[mode] = index.tokenize(texts)
            self._seconds[f"tokenize:{mode}"] = time.perf_counter() - t0
        return ShardReport(terms, self._documents, len(self._chunks), self._errors, self._seconds)

    def index(self, statistics: Mapping[str, tuple[np.ndarray, int, np.float64]]) -> float:
        """Pass 2: each index's score matrix from the corpus's statistics, per mode (document
        frequencies of the shard's terms, number of chunks, average length); the seconds."""
        t0 = time.perf_counter()
        for mode, (frequencies, chunks, average_length) in statistics.items():
            self._indexes[mode].index(frequencies, chunks, average_length)
        return time.perf_counter() - t0

    def search(
        self, mode: str, queries: Sequence[Sequence[str]], top_k: int
    ) -> list[list[tuple[int, float, ChunkFields]]]:
        """Each query's best `top_k` chunks of this shard: (position in the shard, score,
        the chunk's fields as plain values, cheap to send; `result_fields` makes them the
        fields of a query result)."""
        found = self._indexes[mode].search(queries, top_k)
        chunks = self._chunks
        return [[(p, s, chunks[p]) for p, s in hits] for hits in found]


# chunk_id, text, source_key, document_id, chunk_index, start_char, end_char, locator fields
ChunkFields = tuple[str, str, str, str, int, int, int, dict[str, Any] | None]


def chunk_fields(chunk: Chunk) -> ChunkFields:
    """What a query result needs of `chunk`, as plain values."""
    locator = {k: v for k, v in chunk.locator.items() if k in _LOCATOR_FIELDS} or None
    return (
        chunk.chunk_id,
        chunk.text,
        chunk.source_key,
        chunk.document_id,
        chunk.chunk_index,
        chunk.start_char,
        chunk.end_char,
        locator,
    )


def result_fields(fields: ChunkFields, score: float) -> dict[str, Any]:
    """The fields of a query result, as `KnowledgeBase` gives them, with its score."""
    chunk_id, text, source_key, document_id, chunk_index, start, end, locator = fields
    source = SourceRef(
        source_key=source_key,
        document_id=document_id,
        chunk_id=chunk_id,
        chunk_index=chunk_index,
        start_char=start,
        end_char=end,
        **(locator or {}),
    )
    return {"id": chunk_id, "text": text, "kind": "chunk", "source": source, "score": score}


class ShardGroup(Protocol):
    """The shards of one knowledge base, wherever they run: `call` runs a `CorpusShard`
    method on each shard with its own arguments and returns the results in shard order."""

    size: int

    async def call(self, method: str, arguments: Sequence[tuple[Any, ...]]) -> list[Any]: ...

    async def send(self, method: str, arguments: Sequence[tuple[Any, ...]]) -> None: ...

    async def close(self) -> None: ...


def split_sources(sources: Sequence[RawSource], shards: int) -> list[Sequence[RawSource]]:
    """`sources` in `shards` contiguous runs of (nearly) equal length, so that the chunk
    positions of shard after shard are those of the unsharded build."""
    n = len(sources)
    bounds = [n * i // shards for i in range(shards + 1)]
    return [sources[bounds[i] : bounds[i + 1]] for i in range(shards)]


class ShardedKnowledgeBase(BaseKnowledgeBase):
    """A knowledge base built and queried shard by shard (`CorpusShard`), with the results
    of the unsharded one: BM25 scores equal to the last bit, the best chunks merged by score.

    Create it with `await ShardedKnowledgeBase.create(recipe=..., name=..., sources=...,
    shards=...)` on a `ShardGroup` whose shards were created with the recipe and store.
    """

    def __init__(
        self,
        *,
        name: str,
        recipe: BuildPlan,
        shards: ShardGroup,
        offsets: Sequence[int],
        corpus: Mapping[str, CorpusTerms],
        manifest: KnowledgeBaseManifest,
    ) -> None:
        self.name = name
        self.recipe = recipe
        self._shards = shards
        self._offsets = tuple(offsets)
        self._corpus = dict(corpus)
        builders = recipe.create_index_builders()
        self._tokenizers = {
            mode: QueryTokenizer(check_shardable_bm25(builders[mode], f"recipe.indexes.{mode}"))
            for mode in self._corpus
        }
        self._manifest = manifest
        self._reranker = recipe.create_reranker()
        self._answerer = recipe.create_answerer()
        self._batches: dict[tuple[str, int], list[tuple[str, asyncio.Future[QueryResponse]]]] = {}

    @classmethod
    async def create(
        cls,
        *,
        recipe: BuildPlan,
        name: str,
        sources: Sequence[RawSource],
        shards: ShardGroup,
        progress: StageReporter = NO_PROGRESS,
    ) -> ShardedKnowledgeBase:
        """Build over `sources`, split into contiguous runs, one per shard of `shards`."""
        check_shardable(recipe)
        started = time.perf_counter()
        parts = split_sources(sources, shards.size)
        with progress.stage("parse+chunk (shards)", len(sources), "documents") as stage:
            for start in range(0, max(len(p) for p in parts), SOURCE_BATCH):
                batches = [tuple(p[start : start + SOURCE_BATCH]) for p in parts]
                await shards.send("add_sources", [(b,) for b in batches])
                stage.advance(sum(len(b) for b in batches))
            reports: list[ShardReport] = await shards.call("tokenize", [()] * shards.size)
        parsed = time.perf_counter()
        errors = {k: v for r in reports for k, v in r.errors.items()}
        chunks = sum(r.chunks for r in reports)
        if not chunks:
            raise EmptyKnowledgeBaseError(len(sources), errors)
        modes = list(reports[0].terms)
        corpus = {m: CorpusTerms.merge(r.terms[m] for r in reports) for m in modes}
        statistics = [
            {
                m: (corpus[m].frequencies_of(r.terms[m].terms), corpus[m].chunks,
                    corpus[m].average_length)
                for m in modes
            }
            for r in reports
        ]  # fmt: skip
        merged = time.perf_counter()
        with progress.stage("index (shards)", shards.size, "shards") as stage:
            index_seconds = await shards.call("index", [(s,) for s in statistics])
            stage.advance(shards.size)
        offsets = np.cumsum([0] + [r.chunks for r in reports[:-1]]).tolist()
        steps = [
            _step("parse", recipe.parser["_target_"], reports, "parse",
                  {"sources": len(sources), "parsed": sum(r.documents for r in reports),
                   "failed": len(errors), "shards": shards.size}),
            _step("chunk", recipe.chunker["_target_"], reports, "chunk", {"chunks": chunks}),
        ]  # fmt: skip
        for mode in modes:
            tokenized = max(r.seconds.get(f"tokenize:{mode}", 0.0) for r in reports)
            steps.append(
                BuildStep(
                    name=f"index:{mode}",
                    component=recipe.indexes[mode]["_target_"],
                    seconds=tokenized + (merged - parsed) + max(index_seconds),
                    counts={"chunks": chunks, "shards": shards.size},
                )
            )
        manifest = KnowledgeBaseManifest(
            name=name,
            recipe_name=recipe.name,
            query_modes=recipe.query_modes,
            source_keys=tuple(s.key for s in sources),
            steps=tuple(steps),
            counts={
                "sources": len(sources),
                "documents": sum(r.documents for r in reports),
                "chunks": chunks,
                "document_errors": len(errors),
                "shards": shards.size,
            },
            build_seconds=time.perf_counter() - started,
            document_errors=errors,
        )
        return cls(
            name=name,
            recipe=recipe,
            shards=shards,
            offsets=offsets,
            corpus=corpus,
            manifest=manifest,
        )

    def manifest(self) -> KnowledgeBaseManifest:
        """What was built: steps (the slowest shard's seconds), counts (with `shards`),
        build seconds and document errors."""
        return self._manifest

    @property
    def query_modes(self) -> tuple[str, ...]:
        """The query modes this knowledge base answers."""
        return self.recipe.query_modes

    async def _search(
        self, texts: Sequence[str], mode: str, top_k: int
    ) -> list[list[tuple[int, float, ChunkFields]]]:
        if mode not in self._corpus:
            raise UnknownQueryModeError(
                f"query mode {mode!r} is not offered by recipe {self.recipe.name!r}; "
                f"available: {list(self.recipe.query_modes)}"
            )
        tokenizer, corpus = self._tokenizers[mode], self._corpus[mode]
        terms = [tokenizer.terms(text, corpus) for text in texts]
        found = await self._shards.call("search", [(mode, terms, top_k)] * self._shards.size)
        return [
            merge_hits(
                [
                    [(offset + p, s, fields) for p, s, fields in shard_hits[i]]
                    for offset, shard_hits in zip(self._offsets, found, strict=True)
                ],
                top_k,
            )
            for i in range(len(texts))
        ]

    async def query(
        self, text: str, *, mode: str, top_k: int = 10, options: Mapping[str, Any] | None = None
    ) -> QueryResponse:
        """Rank the corpus's chunks for `text` with query mode `mode`.

        Queries made concurrently (the runner keeps `max_concurrent_queries` in flight) go to
        the shards together, in one call per shard: a call to a Ray actor costs a round trip."""
        if options:
            return (await self.query_many([text], mode=mode, top_k=top_k, options=options))[0]
        loop = asyncio.get_running_loop()
        waiting = loop.create_future()
        batch = self._batches.setdefault((mode, top_k), [])
        batch.append((text, waiting))
        if len(batch) == 1:  # the first of a batch sends it once the others have joined
            loop.call_soon(lambda: loop.create_task(self._send_batch(mode, top_k)))
        return await waiting

    async def _send_batch(self, mode: str, top_k: int) -> None:
        batch = self._batches.pop((mode, top_k), [])
        try:
            responses = await self.query_many([t for t, _ in batch], mode=mode, top_k=top_k)
        except Exception as exc:
            for _, waiting in batch:
                if not waiting.done():
                    waiting.set_exception(exc)
            return
        for (_, waiting), response in zip(batch, responses, strict=True):
            if not waiting.done():
                waiting.set_result(response)

    async def query_many(
        self,
        texts: Sequence[str],
        *,
        mode: str,
        top_k: int = 10,
        options: Mapping[str, Any] | None = None,
    ) -> list[QueryResponse]:
        """Rank for several queries at once (one call to each shard)."""
        if top_k <= 0:
            raise ValueError(f"top_k must be a positive integer, got {top_k}")
        started = time.perf_counter()
        hits = await self._search(texts, mode, top_k)
        seconds = (time.perf_counter() - started) / max(len(texts), 1)
        responses = [
            QueryResponse(
                query=text,
                mode=mode,
                results=[result_fields(fields, score) for _, score, fields in found],  # type: ignore[arg-type]
                trace={"retrieval_seconds": seconds, "candidates": len(found)},
            )
            for text, found in zip(texts, hits, strict=True)
        ]
        return await rerank_and_answer(responses, self._reranker, self._answerer)

    async def aclose(self) -> None:
        """Release the shards (their workers end) and the reranker's or answerer's connections."""
        await self._shards.close()
        await close_parts(self._reranker, self._answerer)


def _step(
    name: str, component: str, reports: Sequence[ShardReport], key: str, counts: dict[str, int]
) -> BuildStep:
    """A build step timed by its slowest shard (the shards run side by side)."""
    return BuildStep(
        name=name,
        component=component,
        seconds=max(r.seconds.get(key, 0.0) for r in reports),
        counts=counts,
    )


__all__ = [
    "CorpusShard",
    "ShardGroup",
    "ShardedKnowledgeBase",
    "ShardingError",
    "check_shardable",
    "split_sources",
]
