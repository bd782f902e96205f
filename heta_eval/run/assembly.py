"""Turn a composed Hydra config into validated, ready-to-run components.

`config_hash` digests what shapes the results (not paths, progress, caches or tracking): the
configuration part of a run's identity.

Everything here is cheap (no MLflow, no index building), so a bad config fails in well
under two seconds and before any tracking run exists.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig
from pydantic import ValidationError

from heta_eval.benchmarks.splits import TuningSettings, tuning_view
from heta_eval.config.components import (
    ComponentError,
    check_argument_types,
    check_arguments,
    instantiate,
)
from heta_eval.config.endpoint_keys import missing_endpoint_keys
from heta_eval.config.env_names import check_env_names, name_env_values
from heta_eval.config.resolve import ConfigError, check_finite, resolve_config
from heta_eval.config.secrets import (
    check_tracking_uri,
    interpolated_env_values,
    mask_secrets,
    remember_secrets,
)
from heta_eval.kb.answering import Answerer, BaseAnswerer
from heta_eval.kb.build_cache import BuildCache
from heta_eval.kb.chunking import Chunker
from heta_eval.kb.index.base import BaseIndexBuilder, Fusion, IndexBuilder
from heta_eval.kb.parsers.base import not_a_parser
from heta_eval.kb.recipe import KnowledgeRecipe
from heta_eval.kb.replay import ReplayRecipe
from heta_eval.kb.rerank import BaseReranker, Reranker
from heta_eval.protocols import (
    BaseRecipe,
    BaseTracker,
    BenchmarkAdapter,
    BenchmarkEvaluatorProtocol,
    BenchmarkProtocol,
    Evaluator,
    RecipeLike,
    Tracker,
    missing_members,
)
from heta_eval.records.suite import suite_from_config
from heta_eval.run.journal import CaseJournal
from heta_eval.run.ray_units import check_ray_settings
from heta_eval.run.runner import BenchmarkError, BenchmarkRunner, check_run_arguments
from heta_eval.run.settings import RayExecutorError, RunnerSettings, cap_workers, resolve_top_k
from heta_eval.run.shards import ShardingError, check_shard_settings

log = logging.getLogger(__name__)

GROUPS = ("benchmark", "recipe", "evaluator", "runner", "tracking")
# Keys that say where things are written, not what is evaluated: left out of the config hash.
_NOT_HASHED = {"paths", "tracking", "hydra", "optimized_metric", "suite"}
# Runner keys that change how or where the work runs but no case's result (like `workers`,
# `shards` or `query_batch_size`, whose batches give each query what it gets alone). A run
# that differs only in these reuses a finished run (`runner.resume`); the reused latencies
# keep the label of how they were measured (`latency_batch_size`).
_RUNNER_NOT_HASHED = {
    "output_dir",
    "store_dir",
    "workspace_dir",
    "cache_dir",
    "cache",
    "workers",
    "executor",
    "ray_address",
    "ray_num_cpus",
    "ray_max_retries",
    "shards",
    "max_concurrent_queries",
    "query_batch_size",
    "resume",
    "state_dir",
    "progress",
    "dry_run",
    "strict",
    "max_failure_rate",
}


@dataclass
class RunComponents:
    """The validated pieces of one run."""

    benchmark: BenchmarkProtocol
    recipe: RecipeLike
    evaluators: tuple[BenchmarkEvaluatorProtocol, ...]
    settings: RunnerSettings
    tracker: Tracker
    resolved: dict[str, Any]
    config_hash: str

    @property
    def top_k(self) -> int:
        """How deep this run retrieves (`runner.top_k`, else the benchmark's default)."""
        return resolve_top_k(self.settings, self.benchmark)

    def runner(self, journal: CaseJournal | None = None) -> BenchmarkRunner:
        """A runner over these components (with the build cache the settings ask for)."""
        return BenchmarkRunner(
            benchmark=self.benchmark,
            recipe=self.recipe,
            evaluators=self.evaluators,
            settings=self.settings,
            journal=journal,
            build_cache=BuildCache(self.settings.cache_dir, self.settings.cache),
        )


def _describe(group: str, error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        key = ".".join([group, *(str(p) for p in item["loc"])]) if item["loc"] else group
        message = item["msg"].removeprefix("Value error, ")
        got = item.get("input")
        shown = "" if isinstance(got, Mapping) else f" (got {got!r:.80})"
        lines.append(f"{key}: {message}{shown}")
    return "\n".join(lines)


def config_hash(resolved: Mapping[str, Any], content: Mapping[str, str] | None = None) -> str:
    """sha256 of what determines the results (benchmark, recipe, evaluators, runner knobs)
    and, for a recipe that reads files (a replay), their `content` digests."""
    material = {k: v for k, v in resolved.items() if k not in _NOT_HASHED}
    if content:
        material["recipe_content"] = dict(content)
    runner = dict(material.get("runner") or {})
    material["runner"] = {k: v for k, v in runner.items() if k not in _RUNNER_NOT_HASHED}
    payload = json.dumps(material, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def create_component(group: str, spec: Any, *, recursive: bool = True) -> Any:
    """Instantiate `spec`; any failure becomes a ConfigError naming `group` and the key."""
    if not isinstance(spec, Mapping) or "_target_" not in spec:
        raise ConfigError(f"{group}: expected a mapping with a _target_, got {spec!r:.80}")
    try:
        return instantiate(spec, _recursive_=recursive)
    except ComponentError as exc:
        cause = exc.__cause__
        while cause is not None and not isinstance(cause, ValidationError):
            cause = cause.__cause__
        if isinstance(cause, ValidationError):
            raise ConfigError(_describe(group, cause)) from None
        raise ConfigError(f"{group}: {exc}") from None


def _check_arguments(spec: Mapping[str, Any], where: str) -> None:
    """`spec` and the component specs nested in it take the arguments they are given."""
    try:
        check_arguments(spec, where)
        check_argument_types(spec, where)
    except ComponentError as exc:
        raise ConfigError(str(exc)) from None
    for key, value in spec.items():
        if isinstance(value, Mapping) and "_target_" in value:
            _check_arguments(value, f"{where}.{key}")


def check_follows(where: str, obj: object, protocol: type, base: type | None = None) -> None:
    """ConfigError unless `obj` (created for `where`) has every member of `protocol`,
    naming what it lacks and the base class (`base`) that gives the optional ones."""
    missing = missing_members(obj, protocol)
    if missing:
        subclass = (
            f"; subclass {base.__module__}.{base.__qualname__} for the defaults" if base else ""
        )
        raise ConfigError(
            f"{where}: {type(obj).__module__}.{type(obj).__qualname__} lacks {missing} of "
            f"the protocol it must follow ({protocol.__module__}.{protocol.__qualname__}"
            f"{subclass})"
        )


# The protocol each kind of recipe component follows, and its base class (if any).
_COMPONENTS: dict[str, tuple[type, type | None]] = {
    "chunker": (Chunker, None),
    "indexes": (IndexBuilder, BaseIndexBuilder),
    "fusions": (Fusion, None),
    "reranker": (Reranker, BaseReranker),
    "answerer": (Answerer, BaseAnswerer),
}


def check_recipe_components(recipe: KnowledgeRecipe) -> None:
    """Create each of the recipe's components once, as its build will: unknown arguments,
    values out of range and a component without its protocol's members fail now, naming
    the key, not as every case failed at build."""
    for key, spec in recipe.component_specs().items():
        _check_arguments(spec, f"recipe.{key}")
        created = create_component(f"recipe.{key}", spec)
        if key == "parser" and (why := not_a_parser(created)) is not None:
            raise ConfigError(f"recipe.parser: {why}")
        kind = _COMPONENTS.get(key.partition(".")[0])
        if kind is not None:
            check_follows(f"recipe.{key}", created, *kind)


def check_replay_files(recipe: ReplayRecipe) -> None:
    """Read and check a replay's files now: a malformed line fails before any work, named
    `FILE:LINE`, and the files' digests are ready for the run's identity."""
    try:
        recipe.check_files()
    except ValueError as exc:  # a ReplayInputError, as from the recipe's validation
        raise ConfigError(f"recipe: {exc}") from None


def _evaluators(
    spec: Mapping[str, Any], benchmark: BenchmarkProtocol
) -> tuple[BenchmarkEvaluatorProtocol, ...]:
    allowed = {"use_benchmark_defaults", "extra"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ConfigError(f"evaluator: unknown keys {unknown}; allowed: {sorted(allowed)}")
    chosen: list[BenchmarkEvaluatorProtocol] = []
    if spec.get("use_benchmark_defaults", True):
        chosen.extend(benchmark.evaluators())
    for i, item in enumerate(spec.get("extra") or []):
        created = create_component(f"evaluator.extra[{i}]", item)
        # A factory such as retrieval_metrics(ks=[...]) gives several evaluators at once.
        for extra in created if isinstance(created, list | tuple) else [created]:
            if any(e.name == extra.name for e in chosen):
                # The benchmark already scores this metric; its own settings win.
                log.info("evaluator.extra[%d]: %s is already among the evaluators", i, extra.name)
                continue
            chosen.append(extra)
    return tuple(chosen)


def check_combinations(
    resolved: Mapping[str, Any],
    modes: tuple[str, ...],
    evaluators: tuple[BenchmarkEvaluatorProtocol, ...],
    settings: RunnerSettings,
    benchmark: BenchmarkProtocol,
) -> None:
    """Options that are valid alone but not together: refused (or warned) before any work."""
    metric = resolved.get("optimized_metric")
    if metric:
        produced = [f"{mode}.{e.name}" for mode in modes for e in evaluators]
        if metric not in produced:
            raise ConfigError(
                f"optimized_metric: {metric!r} is not a score this run produces "
                f"({{runner.query_modes}}.{{evaluator name}}); available: {produced}"
            )
    top_k = resolve_top_k(settings, benchmark)
    deeper = [e.name for e in evaluators if e.k is not None and e.k > top_k]
    if deeper:
        log.warning(
            "runner.top_k=%d retrieves fewer results than evaluators %s look at; they are "
            "computed over %d results",
            top_k,
            deeper,
            top_k,
        )


def _tuning_view(benchmark: BenchmarkProtocol, spec: Any) -> BenchmarkProtocol:
    """The tuning or test part of the benchmark (`tuning`, set by hyperparameter searches)."""

    try:
        return tuning_view(benchmark, TuningSettings.model_validate(spec))
    except ValidationError as exc:
        raise ConfigError(_describe("tuning", exc)) from None


def assemble(cfg: DictConfig) -> RunComponents:
    """Validate the composed config and create benchmark, recipe, evaluators and tracker.
    A `ConfigError` shows a value taken from the environment as `${oc.env:NAME}`."""
    try:
        return _assemble(cfg)
    except ConfigError as exc:
        raise ConfigError(name_env_values(str(exc), cfg)) from None


def _assemble(cfg: DictConfig) -> RunComponents:
    check_env_names(cfg)
    resolved = resolve_config(cfg)
    remember_secrets(interpolated_env_values(cfg))  # masked wherever this process masks
    check_finite({k: v for k, v in resolved.items() if k != "hydra"})
    absent = [g for g in GROUPS if resolved.get(g) is None]
    if absent:
        raise ConfigError(f"config groups without a selection: {absent}")
    if resolved.get("suite") is not None:
        try:
            suite_from_config(resolved["suite"])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    try:
        settings = RunnerSettings.model_validate(resolved["runner"])
    except ValidationError as exc:
        raise ConfigError(_describe("runner", exc)) from None
    settings = cap_workers(settings)
    try:
        check_ray_settings(settings)
    except RayExecutorError as exc:
        raise ConfigError(str(exc)) from None
    benchmark = create_component("benchmark", resolved["benchmark"])
    check_follows("benchmark", benchmark, BenchmarkProtocol, BenchmarkAdapter)
    if resolved.get("tuning") is not None:
        benchmark = _tuning_view(benchmark, resolved["tuning"])
    recipe_spec = dict(resolved["recipe"])
    if not str(recipe_spec.get("_target_", "")).strip():
        raise ConfigError("recipe: expected a mapping with a _target_")
    # The recipe keeps its components as specs; the knowledge base creates them when it builds.
    recipe = create_component("recipe", recipe_spec, recursive=False)
    check_follows("recipe", recipe, RecipeLike, BaseRecipe)
    if isinstance(recipe, KnowledgeRecipe):
        check_recipe_components(recipe)
    if isinstance(recipe, ReplayRecipe):
        check_replay_files(recipe)
    try:
        check_shard_settings(settings, recipe)
    except ShardingError as exc:
        raise ConfigError(str(exc)) from None
    evaluators = _evaluators(resolved["evaluator"], benchmark)
    for evaluator in evaluators:
        check_follows("evaluator", evaluator, BenchmarkEvaluatorProtocol, Evaluator)
    check_tracking_uri(resolved["tracking"])
    tracker = create_component("tracking", resolved["tracking"])
    check_follows("tracking", tracker, Tracker, BaseTracker)
    try:
        modes = check_run_arguments(recipe, evaluators, settings)
    except BenchmarkError as exc:
        raise ConfigError(str(exc)) from None
    check_combinations(resolved, modes, evaluators, settings, benchmark)
    missing_keys = missing_endpoint_keys(resolved, ("recipe", "evaluator"))
    if missing_keys:
        raise ConfigError("\n".join(missing_keys))
    masked = mask_secrets(resolved)
    return RunComponents(
        benchmark=benchmark,
        recipe=recipe,
        evaluators=evaluators,
        settings=settings,
        tracker=tracker,
        resolved=masked,
        config_hash=config_hash(masked, recipe.content_digests()),
    )
