"""`runner.dry_run=true`: what a run would do, computed without building, querying or tracking.

The plan prepares the benchmark offline (it reads local data and never downloads), applies
`runner.limit`, and for each run unit works out the build cache key exactly as the build
would (raw keys and sha256 of the documents' bytes) to say whether its knowledge base would
be loaded from the cache or built. Nothing is written: no raw documents, no cache entry, no
run state, no MLflow run.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from rich.console import Console
from rich.table import Table

from heta_eval.async_run import run_sync
from heta_eval.benchmarks.download import DownloadError
from heta_eval.kb.build_cache import BuildCache
from heta_eval.progress import NO_PROGRESS
from heta_eval.protocols import Tracker
from heta_eval.records._base import Record
from heta_eval.run.assembly import RunComponents
from heta_eval.run.documents import unit_sources
from heta_eval.run.identity import components_code_digest, run_identity
from heta_eval.run.runner import BenchmarkRunner
from heta_eval.run.state import RunState
from heta_eval.run.units import plan_units
from heta_eval.tracking.null import NullTracker

KbStatus = Literal["cached", "build", "unknown"]
COMPACT_ABOVE = 30  # units; above this the table shows the first ones and the totals
_SHOWN_WHEN_COMPACT = 10


class PlannedUnit(Record):
    """One run unit of the plan: what it holds and what would happen to its knowledge base."""

    unit_id: str
    documents: int
    cases: int
    queries: int
    kb: KbStatus
    note: str = ""


class PlannedResource(Record):
    """A file the benchmark downloads in `prepare()` and that is not available locally."""

    name: str
    uri: str
    size_bytes: int | None = None


class RunPlan(Record):
    """What `heta-eval` would do with this configuration."""

    benchmark: str
    build_scope: str
    recipe: str
    config_hash: str
    query_modes: tuple[str, ...]
    evaluators: tuple[str, ...]
    top_k: int
    limit: int | None
    seed: int
    workers: int
    cache: str
    cache_dir: str
    tracking: str
    data_available: bool
    data_problem: str | None = None
    resources: tuple[PlannedResource, ...] = ()
    total_cases: int = 0
    units: tuple[PlannedUnit, ...] = ()
    previous_report: str | None = None
    interrupted_journal: bool = False

    @property
    def queries(self) -> int:
        """Queries the run would send (cases times query modes, after `limit`)."""
        return sum(u.queries for u in self.units)


class _ReadOnlyStore:
    """The dry run's object store: raw documents are never written."""

    def put(self, key: str, data: bytes) -> None:
        raise RuntimeError(f"dry run: not writing {key}")

    def get(self, key: str) -> bytes:
        raise KeyError(key)

    def exists(self, key: str) -> bool:
        return False

    def list(self, prefix: str = "") -> Iterator[str]:
        return iter(())


def _tracking(tracker: Tracker) -> str:
    name = type(tracker).__name__
    if tracker.uri is None:
        return "none (tracking disabled)" if isinstance(tracker, NullTracker) else name
    if tracker.experiment is None:
        return f"{name} at {tracker.uri}"
    return f"{name} at {tracker.uri} (experiment {tracker.experiment!r})"


def _kb_status(
    runner: BenchmarkRunner, cache: BuildCache, plan: Any, keys: dict[str, tuple[str, str]]
) -> tuple[KbStatus, str]:
    missing = [d.document_id for d in plan.documents if d.document_id not in keys]
    if missing:
        return "unknown", f"{len(missing)} document(s) not readable offline"
    shards = runner.settings.shards or 1
    if shards > 1:  # built on its shards each run, never from the cache
        return "build", f"{shards} shards, not cached"
    found = cache.lookup(runner.recipe, unit_sources(plan, keys))
    notes = {"found": "", "missing": "", "off": "cache reading off", "uncacheable": "not cached"}
    return ("cached" if found == "found" else "build"), notes[found]


async def _make_plan(components: RunComponents) -> RunPlan:
    settings = components.settings
    # Offline: a dry run reads what is local and never downloads.
    offline_settings = settings.model_copy(update={"offline": True})
    cache = BuildCache(settings.cache_dir, settings.cache)
    runner = BenchmarkRunner(
        benchmark=components.benchmark,
        recipe=components.recipe,
        evaluators=components.evaluators,
        settings=offline_settings,
        store=_ReadOnlyStore(),
        build_cache=cache,
        progress=NO_PROGRESS,
    )
    manifest = components.benchmark.manifest
    common: dict[str, Any] = {
        "benchmark": manifest.key,
        "build_scope": manifest.build_scope,
        "recipe": components.recipe.name,
        "config_hash": components.config_hash,
        "query_modes": runner.query_modes,
        "evaluators": tuple(e.name for e in components.evaluators),
        "top_k": runner.top_k,
        "limit": settings.limit,
        "seed": settings.seed,
        "workers": settings.workers,
        "cache": settings.cache,
        "cache_dir": str(settings.cache_dir),
        "tracking": _tracking(components.tracker),
    }
    try:
        loaded = await runner.load()
    except DownloadError as exc:
        resources = tuple(
            PlannedResource(name=r.name, uri=r.uri, size_bytes=r.size_bytes)
            for r in components.benchmark.resources()
        )
        return RunPlan(
            **common,
            previous_report=None,
            interrupted_journal=False,
            data_available=False,
            data_problem=str(exc),
            resources=resources,
        )
    contents = loaded.contents
    identity = run_identity(
        components.config_hash, loaded.data_digest, components_code_digest(components)
    )
    state = RunState(settings.state_dir, identity)
    completed = state.completed() if settings.resume else None
    common["previous_report"] = completed[0].report_path if completed else None
    common["interrupted_journal"] = settings.resume and state.journal().path.is_file()
    plans = plan_units(contents, settings.limit, settings.seed)
    keys: dict[str, tuple[str, str]] = {}
    for plan in plans:
        for document in plan.documents:
            digest = loaded.document_sha256.get(document.document_id)
            if document.document_id in keys or digest is None:
                continue  # read when the benchmark loaded; else not readable offline
            keys[document.document_id] = (document.raw_key(contents.manifest), digest)
    units = []
    for plan in plans:
        status, note = _kb_status(runner, cache, plan, keys)
        units.append(
            PlannedUnit(
                unit_id=plan.unit.unit_id,
                documents=len(plan.documents),
                cases=len(plan.cases),
                queries=len(plan.cases) * len(runner.query_modes),
                kb=status,
                note=note,
            )
        )
    return RunPlan(
        **common, data_available=True, total_cases=len(contents.cases), units=tuple(units)
    )


def make_plan(components: RunComponents) -> RunPlan:
    """The plan of a run of `components` (prepares the benchmark offline; writes nothing)."""
    return run_sync(_make_plan(components))


def _spread(values: Sequence[int]) -> str:
    return f"min {min(values)}, median {statistics.median(values):g}, max {max(values)}"


def _units_table(plan: RunPlan) -> Table:
    compact = len(plan.units) > COMPACT_ABOVE
    shown = plan.units[:_SHOWN_WHEN_COMPACT] if compact else plan.units
    table = Table(title="run units", title_justify="left", show_footer=True)
    labels = {"cached": "found in cache", "build": "to build", "unknown": "unknown"}
    found = sum(u.kb == "cached" for u in plan.units)
    columns = (
        ("unit", f"{len(plan.units)} unit(s)"),
        ("documents", str(sum(u.documents for u in plan.units))),
        ("cases", str(sum(u.cases for u in plan.units))),
        ("queries", str(plan.queries)),
        ("knowledge base", f"{len(plan.units) - found} to build, {found} in cache"),
    )
    for name, footer in columns:
        numeric = name in ("documents", "cases", "queries")
        table.add_column(name, footer=footer, justify="right" if numeric else "left")
    for unit in shown:
        kb = labels[unit.kb] + (f" ({unit.note})" if unit.note else "")
        table.add_row(unit.unit_id, str(unit.documents), str(unit.cases), str(unit.queries), kb)
    if compact:
        table.add_row(f"… {len(plan.units) - len(shown)} more units", "", "", "", "")
    return table


def print_plan(plan: RunPlan, console: Console | None = None) -> None:
    """Print the plan: settings, data, the units table (compact for many units) and totals."""
    console = console or Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 120))
    say = lambda text: console.print(text, soft_wrap=True, highlight=False)  # noqa: E731
    say(f"dry run: nothing is built, queried, written or tracked (config {plan.config_hash})")
    say(f"benchmark: {plan.benchmark} (build scope: {plan.build_scope})")
    say(f"recipe: {plan.recipe} · query modes: {', '.join(plan.query_modes)} · top_k {plan.top_k}")
    say(f"evaluators: {', '.join(plan.evaluators)}")
    limit = f"{plan.limit} cases (seed {plan.seed})" if plan.limit else "none"
    say(f"limit: {limit} · workers: {plan.workers}")
    say(f"build cache: {plan.cache} at {plan.cache_dir}")
    say(f"tracking: {plan.tracking}")
    if plan.previous_report:
        say(
            f"already evaluated: a run reuses {plan.previous_report} "
            "(runner.resume=false evaluates again)"
        )
    elif plan.interrupted_journal:
        say("an interrupted run of this configuration left a journal: a run finishes it")
    if not plan.data_available:
        say(f"data: not available locally ({plan.data_problem})")
        for resource in plan.resources:
            size = f", {resource.size_bytes:,} bytes" if resource.size_bytes else ""
            say(f"  to download: {resource.name}{size} from {resource.uri}")
        say("a run downloads them unless runner.offline=true; heta-eval-prepare fetches them now")
        return
    console.print(_units_table(plan))
    if len(plan.units) > COMPACT_ABOVE:
        say(f"documents per unit: {_spread([u.documents for u in plan.units])}")
        say(f"cases per unit: {_spread([u.cases for u in plan.units])}")
    cases = sum(u.cases for u in plan.units)
    to_build = sum(u.kb != "cached" for u in plan.units)
    say(
        f"plan: {len(plan.units)} knowledge base(s), {to_build} to build and "
        f"{len(plan.units) - to_build} found in the build cache; {cases} of {plan.total_cases} "
        f"cases x {len(plan.query_modes)} query mode(s) = {plan.queries} queries"
    )


def dry_run(components: RunComponents) -> RunPlan:
    """Make and print the plan of `components`; return it."""
    plan = make_plan(components)
    print_plan(plan)
    return plan


__all__ = ["COMPACT_ABOVE", "PlannedUnit", "RunPlan", "dry_run", "make_plan", "print_plan"]
