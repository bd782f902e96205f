"""`runner.shards`: one unit's corpus split into shards, built and queried on Ray actors.

With `runner.shards=N runner.executor=ray`, each unit's knowledge base is a
`ShardedKnowledgeBase` over N `CorpusShard` actors (one Ray worker each, `ray_num_cpus`
CPUs reserved), on a private local cluster or the one at `runner.ray_address`; the run's
process drives them (merges statistics, tokenises queries, merges results) and evaluates the
units one after another. With `runner.executor=local`, the same shards run one after another
in the run's process: the same results, no memory saved (a check, or a machine without Ray).

Ray is imported only when shards run on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from heta_eval.kb.documents import RawSource
from heta_eval.kb.index.sharded_bm25 import ShardingError
from heta_eval.kb.sharded import CorpusShard, ShardedKnowledgeBase, check_shardable
from heta_eval.kb.store import ObjectStore
from heta_eval.progress import NO_PROGRESS, StageReporter
from heta_eval.protocols import BuildPlan, RecipeLike
from heta_eval.run.settings import RunnerSettings, check_shared_paths, is_remote

# A private cluster's object store: the shards' statistics and results pass through it.
SHARDS_OBJECT_STORE_BYTES = 256 * 1024 * 1024


def sharded(settings: RunnerSettings) -> bool:
    """Whether `settings` split each unit's corpus into shards."""
    return (settings.shards or 1) > 1


def check_shard_settings(settings: RunnerSettings, recipe: RecipeLike) -> None:
    """Raise ShardingError when `runner.shards` is set for a recipe it cannot split exactly
    (anything but BM25 indexes: dense, fusion, a replay)."""
    if sharded(settings):
        check_shardable(recipe)


@dataclass(frozen=True)
class ShardPlan:
    """How a unit's corpus is sharded: how many shards, and where they run."""

    shards: int
    executor: str = "local"
    num_cpus: float = 1

    @classmethod
    def of(cls, settings: RunnerSettings) -> ShardPlan | None:
        """The plan `settings` ask for, or None (no sharding)."""
        if not sharded(settings):
            return None
        return cls(int(settings.shards or 1), settings.executor, settings.ray_num_cpus)

    async def create(
        self,
        *,
        recipe: RecipeLike,
        name: str,
        store: ObjectStore,
        sources: Sequence[RawSource],
        progress: StageReporter = NO_PROGRESS,
    ) -> ShardedKnowledgeBase:
        """Start the shards and build the unit's knowledge base on them (the shards end when
        the build fails or the knowledge base is closed)."""
        plan = check_shardable(recipe)
        group: LocalShards | RayShards
        if self.executor == "ray":
            group = RayShards(self.shards, plan, store, self.num_cpus)
        else:
            group = LocalShards(self.shards, plan, store)
        try:
            return await ShardedKnowledgeBase.create(
                recipe=plan, name=name, sources=sources, shards=group, progress=progress
            )
        except BaseException:
            await group.close()
            raise


class LocalShards:
    """Shards as objects of this process, called one after another."""

    def __init__(self, size: int, recipe: BuildPlan, store: ObjectStore) -> None:
        self.size = size
        self._shards = [CorpusShard(recipe, store) for _ in range(size)]

    async def call(self, method: str, arguments: Sequence[tuple[Any, ...]]) -> list[Any]:
        return [getattr(s, method)(*a) for s, a in zip(self._shards, arguments, strict=True)]

    async def send(self, method: str, arguments: Sequence[tuple[Any, ...]]) -> None:
        await self.call(method, arguments)

    async def close(self) -> None:
        self._shards = []


class RayShards:
    """Shards as Ray actors, one per shard, each reserving `num_cpus` CPUs; calls go to
    every actor at once (an actor runs its calls in the order they were sent)."""

    def __init__(self, size: int, recipe: BuildPlan, store: ObjectStore, num_cpus: float) -> None:
        import ray

        cpus = ray.cluster_resources().get("CPU", 0)
        if cpus < size * num_cpus:
            raise ShardingError(
                f"runner.shards={size} with runner.ray_num_cpus={num_cpus} needs "
                f"{size * num_cpus:g} CPUs, and the Ray cluster has {cpus:g}: the shards' actors "
                "would wait for CPUs forever; use fewer shards, a smaller ray_num_cpus or a "
                "bigger cluster"
            )
        self.size = size
        actor: Any = ray.remote(CorpusShard).options(num_cpus=num_cpus, max_restarts=0)
        self._actors = [actor.remote(recipe, store) for _ in range(size)]
        self._pending: list[Any] = []

    async def call(self, method: str, arguments: Sequence[tuple[Any, ...]]) -> list[Any]:
        refs = [
            getattr(a, method).remote(*args)
            for a, args in zip(self._actors, arguments, strict=True)
        ]
        pending, self._pending = self._pending, []
        results = await asyncio.gather(*(asyncio.wrap_future(r.future()) for r in pending + refs))
        return results[len(pending) :]

    async def send(self, method: str, arguments: Sequence[tuple[Any, ...]]) -> None:
        """Send without waiting (the next `call` waits, and raises what these raised)."""
        self._pending.extend(
            getattr(a, method).remote(*args)
            for a, args in zip(self._actors, arguments, strict=True)
        )

    async def close(self) -> None:
        import ray

        for actor in self._actors:
            ray.kill(actor)
        self._actors, self._pending = [], []


@contextlib.contextmanager
def ray_for_shards(settings: RunnerSettings) -> Iterator[None]:
    """Connected to the configured Ray cluster, or to a private local one with a CPU for
    each shard's actor (at least `workers`), shut down at the end if started here."""
    if settings.executor != "ray" or not sharded(settings):
        yield
        return
    import ray

    check_shared_paths(settings)
    started = False
    if not ray.is_initialized():
        if is_remote(settings.ray_address):
            ray.init(address=settings.ray_address, log_to_driver=False)
        else:
            cpus = max(settings.workers, math.ceil((settings.shards or 1) * settings.ray_num_cpus))
            ray.init(
                num_cpus=cpus,
                include_dashboard=False,
                object_store_memory=SHARDS_OBJECT_STORE_BYTES,
                log_to_driver=False,
            )
        started = True
    try:
        yield
    finally:
        if started:
            ray.shutdown()


__all__ = [
    "LocalShards",
    "RayShards",
    "ShardPlan",
    "ShardingError",
    "check_shard_settings",
    "ray_for_shards",
    "sharded",
]
