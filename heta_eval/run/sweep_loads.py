"""A sweep's jobs in one process read their benchmark once while its files stay unchanged.

Every job of a sweep whose benchmark configuration is the same (a grid over `runner.top_k`,
a recipe's parameters) would read, validate and digest the same documents and cases again;
on SciFact that is a few tenths of a second a job. In the launching process of a sweep
(`sweep_workers.enabled()`) the last loaded benchmark is kept, with the signature (size,
mtime, ctime, inode, device) of every file and directory its load read
(`run.file_reads`). The next job of the same benchmark configuration, workspace and
`runner.offline` reuses it only when none of those files changed, appeared or went away;
otherwise, or when the load could not be verified (it used the network, ran a program, or
read a file modified just before), the benchmark is read again. The checks a load makes
for the run (evidence naming unknown documents, a replay's ids) are made again for every job.

A reused load is said and tracked: a log line names the job that read it, the report's
`run.benchmark_load_reused` records that job and the number of files checked, and the
tracking run gets the tags `heta_eval.benchmark_load` (`read` or `reused`) and
`heta_eval.benchmark_load.reused_from_job`. The data digest, and so the run's identity and
its results, are those of the load that is reused: the same bytes.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from heta_eval.run.file_reads import FileReads, watch_reads

if TYPE_CHECKING:
    from heta_eval.run.runner import BenchmarkRunner, LoadedBenchmark

log = logging.getLogger(__name__)

LOAD_TAG = "heta_eval.benchmark_load"
REUSED_FROM_JOB_TAG = "heta_eval.benchmark_load.reused_from_job"


@dataclass(frozen=True)
class _Kept:
    key: str
    job: int | None
    loaded: LoadedBenchmark
    reads: FileReads


_lock = threading.Lock()
_kept: _Kept | None = None


def load_key(benchmark_key: str, runner: BenchmarkRunner) -> str:
    """What must be equal for a load to be reused: the benchmark's configuration (its
    digest from `assemble`, secrets unmasked), where it prepares its data, and offline."""
    settings = runner.settings
    material = f"{benchmark_key}\0{settings.workspace_dir.resolve()}\0{settings.offline}"
    return hashlib.sha256(material.encode()).hexdigest()


async def load(runner: BenchmarkRunner, key: str, job: int | None) -> LoadedBenchmark:
    """The benchmark of `runner`, reused from an earlier job of this process when its key
    matches and its files are unchanged, else read (and kept for the next job)."""
    global _kept
    with _lock:
        kept = _kept
    if kept is not None and kept.key == key:
        changed = kept.reads.changed()
        if changed is None:
            from heta_eval.records import BenchmarkLoadReuse

            runner.check_loaded(kept.loaded.contents)
            files = len(kept.reads.signatures)
            log.info(
                "benchmark %s: reusing the documents and cases sweep job #%s read (data digest "
                "%s); its %d files and directories are unchanged (size, mtime, ctime, inode)",
                kept.loaded.contents.manifest.key,
                kept.job,
                kept.loaded.data_digest[:12],
                files,
            )
            reuse = BenchmarkLoadReuse(job=kept.job, files_checked=files)
            return replace(kept.loaded, reused=reuse)
        log.info(
            "benchmark %s: %s changed since sweep job #%s read it; reading the benchmark again",
            kept.loaded.contents.manifest.key,
            changed,
            kept.job,
        )
    forget()  # what the last job kept is freed before this one reads
    with watch_reads() as reads:
        loaded = await runner.load()
    if reads.unverifiable is not None:
        log.debug("the benchmark read is not kept for later jobs: %s", reads.unverifiable)
        return loaded
    with _lock:
        _kept = _Kept(key, job, loaded, reads)
    return loaded


def forget() -> None:
    """Drop the kept benchmark (at the sweep's end, or before another is read)."""
    global _kept
    with _lock:
        _kept = None
