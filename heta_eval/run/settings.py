"""Settings of the runner group, validated before any work starts."""

from __future__ import annotations

import logging
import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from heta_eval.config.ranges import MAX_TOP_K
from heta_eval.records._base import Record

if TYPE_CHECKING:
    from heta_eval.protocols import BenchmarkProtocol

log = logging.getLogger(__name__)

# The Monte Carlo error of a bootstrap bound shrinks as 1/sqrt(resamples) and the time grows
# with them: at this bound the error is a tenth of the default's; beyond, runs only get slower.
MAX_BOOTSTRAP_RESAMPLES = 100_000
QUERY_BATCH_SIZE = 512
"""Default `runner.query_batch_size`: BM25 queries retrieved in one call."""


class RunnerSettings(Record):
    """How a run proceeds: ranking depth, query modes, concurrency, limits and directories."""

    top_k: int | None = Field(
        default=None,
        gt=0,
        le=MAX_TOP_K,
        description="results per query (at most 100,000); null: the benchmark's default_top_k",
    )
    query_modes: tuple[str, ...] | None = Field(
        default=None, description="query modes to evaluate; null means all the recipe offers"
    )
    max_concurrent_queries: int = Field(default=8, ge=1)
    query_batch_size: int = Field(
        default=QUERY_BATCH_SIZE,
        ge=1,
        strict=True,
        description="queries of a mode whose batches give each query what it gets alone "
        "(BM25 without reranker or answerer) retrieved together in one call; each case's "
        "latency is then its batch's seconds shared out evenly, labelled with the batch size "
        "(`latency_batch_size`). 1: every query alone, with its own measured latency",
    )
    limit: int | None = Field(
        default=None, gt=0, description="evaluate a seeded subset of N cases (smoke runs)"
    )
    seed: int = Field(default=0, ge=0, description="seed of case sampling and the bootstrap")
    bootstrap_resamples: int = Field(
        default=1000,
        ge=1,
        le=MAX_BOOTSTRAP_RESAMPLES,
        description="resamples of the bootstrap confidence intervals (at most 100,000)",
    )
    confidence: float = Field(default=0.95, gt=0, lt=1, description="confidence level of CIs")
    workers: int = Field(
        default=1,
        ge=1,
        description="run units evaluated in parallel worker processes (at most the CPUs this "
        "process may use; more is capped, with a warning)",
    )
    executor: Literal["local", "ray"] = Field(
        default="local",
        description="where run units are evaluated: this machine (in this process, or "
        "`workers` processes) or Ray tasks (`ray_address`)",
    )
    ray_address: str | None = Field(
        default=None,
        description="executor=ray: null starts a private local cluster of `workers` CPUs; "
        "`auto` or `ray://host:10001` joins a running cluster",
    )
    ray_num_cpus: float = Field(
        default=1, gt=0, description="CPUs Ray reserves per unit task (per shard with `shards`)"
    )
    ray_max_retries: int = Field(
        default=3, ge=0, description="runs of a unit task again after its worker died"
    )
    shards: int | None = Field(
        default=None,
        ge=1,
        description="split each unit's corpus into this many shards, each built and queried "
        "on a Ray actor (executor=ray; one after another in this process with executor=local), "
        "with BM25 statistics of the whole corpus: the results of an unsharded run; null or 1: "
        "no sharding. BM25 recipes only; sharded knowledge bases are not cached",
    )
    cache: Literal["off", "read", "write", "readwrite"] = Field(
        default="off",
        description="build cache of knowledge bases (the heta-eval config turns it on)",
    )
    cache_dir: Path = Path("outputs/cache")
    resume: bool = Field(
        default=True,
        description="reuse a finished evaluation of the same config, or finish an interrupted one",
    )
    state_dir: Path = Path("outputs/state")
    output_dir: Path = Path("outputs/run")
    store_dir: Path = Path("outputs/store")
    workspace_dir: Path = Path("outputs/data")
    offline: bool = False
    progress: Literal["auto", "bars", "lines", "off"] = Field(
        default="auto",
        description="progress display: bars on a terminal and log lines otherwise (auto)",
    )
    dry_run: bool = Field(
        default=False, description="print the plan of the run without building or querying"
    )
    strict: bool = Field(
        default=False,
        description="data problems that are warnings by default (evidence naming documents "
        "the benchmark does not have) fail the run before any work",
    )
    max_failure_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="fail the run (exit 1, MLflow FAILED, report kept) when more than this "
        "fraction of case results failed; null: only when all of them failed (always fails)",
    )


def resolve_top_k(settings: RunnerSettings, benchmark: BenchmarkProtocol) -> int:
    """How deep to retrieve: `runner.top_k`, else the benchmark's scoring policy
    (`default_top_k`). The one place this is decided."""
    return settings.top_k or int(benchmark.default_top_k)


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def cap_workers(settings: RunnerSettings) -> RunnerSettings:
    """`settings` with `workers` at most the CPUs available, saying so when it was more.

    Worker processes beyond the CPUs only compete for them (and each holds a copy of the
    run's state). A Ray cluster joined by address has CPUs of its own and is left alone."""
    if settings.executor == "ray" and settings.ray_address is not None:
        return settings
    cpus = available_cpus()
    if settings.workers <= cpus:
        return settings
    log.warning(
        "runner.workers=%d is more than the %d CPU(s) this machine gives the run; using %d "
        "worker(s)",
        settings.workers,
        cpus,
        cpus,
    )
    return settings.model_copy(update={"workers": cpus})


# Directories that are private to one machine: a build cache or object store there cannot
# be shared by the nodes of a cluster.
NODE_LOCAL_PREFIXES = ("/tmp", "/var/tmp", "/dev/shm", "/run", "/var/run")
LOCAL_ADDRESSES = (None, "", "local")


class RayExecutorError(ValueError):
    """`runner.executor=ray` was configured in a way that cannot work."""


def is_remote(address: str | None) -> bool:
    """Whether `runner.ray_address` names a cluster beyond this process's private one."""
    return address not in LOCAL_ADDRESSES


def check_shared_paths(settings: RunnerSettings) -> None:
    """Refuse a remote cluster with a build cache or object store that its nodes cannot
    share: a relative path (each worker resolves it in its own directory) or a node-local
    one (/tmp, /dev/shm, ...)."""
    if settings.executor != "ray" or not is_remote(settings.ray_address):
        return
    checked = {"runner.store_dir": settings.store_dir}
    if settings.cache != "off":
        checked["runner.cache_dir"] = settings.cache_dir
    for key, path in checked.items():
        posix = PurePosixPath(Path(path).as_posix())
        if not posix.is_absolute():
            why = "is a relative path, which each Ray worker would resolve on its own node"
        elif any(posix.is_relative_to(p) for p in NODE_LOCAL_PREFIXES):
            why = "is on node-local storage"
        else:
            continue
        raise RayExecutorError(
            f"{key}={path} {why}; with runner.executor=ray on the cluster at "
            f"runner.ray_address={settings.ray_address}, every node reads and writes it, so it "
            f"must be an absolute path on storage all nodes share (e.g. an NFS mount: "
            f"{key}=/shared/heta_eval/{Path(path).name})"
        )
