"""Tuning and test parts of a benchmark, so that a hyperparameter search never tunes on the
cases it reports.

`tuning_view(benchmark, settings)` gives the benchmark a run evaluates under `tuning.part`:
- a benchmark with its own tuning split (BEIR's `dev` or `train` qrels, through the adapter's
  `tuning_split()` and `with_split()`) tunes on it and is tested on its configured split;
- any other is split by its queries: a seeded share (`holdout_fraction`) of the case ids
  tunes, the rest is held out for the test, chosen by a hash of (seed, case id), so the same
  settings always give the same parts, on every machine. The manifest's split says which
  part a run has (`test-tuning`, `test-heldout`).
Either way the manifest's metadata `tuning` says in words which cases the run has.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from heta_eval.protocols import BenchmarkAdapter, BenchmarkEvaluatorProtocol, BenchmarkProtocol
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkDocument,
    BenchmarkManifest,
    BenchmarkResource,
    BenchmarkRunUnit,
    BenchmarkWorkspace,
    PreparedBenchmark,
)

TUNING_NOTE = "tuning"  # manifest metadata: which cases the part has, in words
PART_NOTE = "tuning_part"  # manifest metadata: `tune` or `test`


class TuningSettings(BaseModel):
    """`tuning` of a hyperparameter search config: which part of the benchmark a run has."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    part: Literal["tune", "test"] = Field(
        description="tune: the tuning split or share; test: the split or held-out rest"
    )
    holdout_fraction: float = Field(
        default=0.5,
        gt=0,
        lt=1,
        description="without a tuning split: the share of the queries that tunes",
    )
    seed: int = Field(default=0, description="seeds which queries tune")


def _noted(
    manifest: BenchmarkManifest, part: str, note: str, split: str | None = None
) -> BenchmarkManifest:
    notes = {PART_NOTE: part, TUNING_NOTE: note}
    update: dict[str, Any] = {"metadata": {**manifest.metadata, **notes}}
    if split is not None:
        update["split"] = split
    return manifest.model_copy(update=update)


def tuning_view(benchmark: BenchmarkProtocol, settings: TuningSettings) -> BenchmarkProtocol:
    """The benchmark a run evaluates for `settings.part` (see the module docstring)."""
    split = benchmark.tuning_split()
    test_split = benchmark.manifest.split
    if split is None:
        return HeldOutCases(benchmark, settings)
    if settings.part == "test":
        note = f"the {test_split!r} qrels, never used for tuning (tuned on {split!r})"
        notes = {PART_NOTE: "test", TUNING_NOTE: note}
        return benchmark.with_split(test_split, notes)
    note = f"the {split!r} qrels; the {test_split!r} qrels are kept for the test"
    return benchmark.with_split(split, {PART_NOTE: "tune", TUNING_NOTE: note})


def tuning_part(case_ids: list[str], fraction: float, seed: int) -> set[str]:
    """The case ids that tune: the `round(fraction * n)` (at least one, and one fewer than
    all) whose sha256 of `{seed}:{case id}` sorts first."""
    if len(case_ids) < 2:
        raise ValueError(
            f"tuning: {len(case_ids)} case(s) cannot be split into a tuning and a test part"
        )
    size = min(max(1, round(fraction * len(case_ids))), len(case_ids) - 1)

    def rank(case_id: str) -> str:
        return hashlib.sha256(f"{seed}:{case_id}".encode()).hexdigest()

    return set(sorted(case_ids, key=rank)[:size])


class HeldOutCases(BenchmarkAdapter):
    """A benchmark restricted to its tuning share of queries, or to the held-out rest."""

    def __init__(self, benchmark: BenchmarkProtocol, settings: TuningSettings) -> None:
        self.benchmark = benchmark
        self.settings = settings
        base = benchmark.manifest
        # The benchmark's retrieval conventions and fetching policy hold for either part.
        self.default_top_k = benchmark.default_top_k
        self.slice_by = tuple(benchmark.slice_by)
        self.ignore_identical_ids = benchmark.ignore_identical_ids
        self.allow_private_urls = benchmark.allow_private_urls
        share = round(100 * settings.holdout_fraction)
        if settings.part == "tune":
            split = f"{base.split}-tuning"
            note = (
                f"a seeded {share}% of the {base.split!r} queries, seed {settings.seed} "
                "(no tuning split); the rest is held out for the test"
            )
        else:
            split = f"{base.split}-heldout"
            note = (
                f"the {100 - share}% of the {base.split!r} queries held out from tuning, "
                f"seed {settings.seed}"
            )
        self._manifest = _noted(base, settings.part, note, split)
        self._chosen: set[str] | None = None

    @property
    def manifest(self) -> BenchmarkManifest:
        return self._manifest

    def resources(self) -> tuple[BenchmarkResource, ...]:
        return self.benchmark.resources()

    async def prepare(self, workspace: BenchmarkWorkspace) -> PreparedBenchmark:
        prepared = await self.benchmark.prepare(workspace)
        return prepared.model_copy(update={"manifest": self.manifest})

    async def documents(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkDocument]:
        async for document in self.benchmark.documents(prepared):
            yield document

    async def _part(self, prepared: PreparedBenchmark) -> set[str]:
        """The case ids of this part (every case of the benchmark is read once)."""
        if self._chosen is None:
            ids = [case.case_id async for case in self.benchmark.cases(prepared)]
            tuning = tuning_part(ids, self.settings.holdout_fraction, self.settings.seed)
            self._chosen = tuning if self.settings.part == "tune" else set(ids) - tuning
        return self._chosen

    async def cases(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkCase]:
        chosen = await self._part(prepared)
        async for case in self.benchmark.cases(prepared):
            if case.case_id in chosen:
                yield case

    async def run_units(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkRunUnit]:
        chosen = await self._part(prepared)
        every = None
        async for unit in self.benchmark.run_units(prepared):
            if unit.case_ids:
                ids = tuple(c for c in unit.case_ids if c in chosen)
            else:  # every case of the benchmark, in its order
                if every is None:
                    every = [case.case_id async for case in self.benchmark.cases(prepared)]
                ids = tuple(c for c in every if c in chosen)
            if ids:  # a unit without cases of this part is not built
                yield unit.model_copy(update={"case_ids": ids})

    def evaluators(self) -> tuple[BenchmarkEvaluatorProtocol, ...]:
        return self.benchmark.evaluators()
