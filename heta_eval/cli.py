"""The `heta-eval` command: a Hydra app that evaluates a recipe on a benchmark."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from heta_eval import __version__
from heta_eval.assembly import ConfigError, RunComponents, assemble
from heta_eval.code_version import code_version, git_commit
from heta_eval.hydra_outputs import scrub_hydra_outputs
from heta_eval.records import EvaluationReport
from heta_eval.run_state import RunState
from heta_eval.secrets import mask_override

log = logging.getLogger("heta_eval")
# Overrides that say where things go, not what is evaluated; left out of run names.
_NOT_IN_RUN_NAME = ("paths.", "tracking.", "hydra.", "runner.output_dir", "runner.store_dir")


def config_dir() -> Path:
    """The Hydra config groups: inside the package in a wheel, `conf/` in a source checkout."""
    packaged = Path(__file__).resolve().parent / "conf"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / "conf"


def _run_tags(
    components: RunComponents, overrides: list[str], sweep_id: str | None = None
) -> dict[str, str]:
    manifest = components.benchmark.manifest
    tags = {
        "heta_eval.version": __version__,
        "heta_eval.config_hash": components.config_hash,
        "benchmark.name": manifest.name,
        "benchmark.version": manifest.version,
        "benchmark.split": manifest.split,
        "benchmark.build_scope": manifest.build_scope,
        "recipe.name": components.recipe.name,
        "heta_eval.overrides": " ".join(overrides),
    }
    if sweep_id:
        tags["heta_eval.sweep_id"] = sweep_id
    commit = git_commit()
    if commit:
        tags["mlflow.source.git.commit"] = commit
    return tags


async def _execute(
    components: RunComponents,
    overrides: list[str],
    parent_run_id: str | None,
    sweep_id: str | None = None,
) -> EvaluationReport:
    """Evaluate (or reuse, or resume) with this configuration's run state held by us alone."""
    settings = components.settings
    with RunState(settings.state_dir, components.config_hash, code_version()).lock():
        return await _execute_locked(components, overrides, parent_run_id, sweep_id)


async def _execute_locked(
    components: RunComponents,
    overrides: list[str],
    parent_run_id: str | None,
    sweep_id: str | None = None,
) -> EvaluationReport:
    settings = components.settings
    state = RunState(settings.state_dir, components.config_hash, code_version())
    if not settings.resume:
        state.reset()
    completed = state.completed()
    if completed is not None:
        log.info(
            "this configuration was already evaluated (report %s); set runner.resume=false "
            "to evaluate it again",
            completed.report,
        )
        report = EvaluationReport.read_json(completed.report)
        if hasattr(components.tracker, "run_id"):
            components.tracker.run_id = completed.tracking_run_id
        if completed.report.resolve() != (settings.output_dir / "report.json").resolve():
            report.write_json(settings.output_dir / "report.json")  # atomic, unlike a copy
        return report
    journal = state.journal()
    runner = components.runner(journal=journal)
    contents = await runner.load()
    tracker = components.tracker
    manifest = components.benchmark.manifest
    run_name = f"{manifest.name}/{components.recipe.name}"
    shown = [o for o in overrides if not o.lstrip("+~").startswith(_NOT_IN_RUN_NAME)]
    if shown:
        run_name += " " + ",".join(shown)
    previous = state.tracking_run_id()
    if previous is None or not tracker.resume(previous):
        start_args: dict[str, Any] = {
            "run_name": run_name,
            "config": components.resolved,
            "tags": _run_tags(components, overrides, sweep_id),
        }
        if parent_run_id:
            start_args["parent_run_id"] = parent_run_id
        tracker.start(**start_args)
        state.save_tracking_run_id(getattr(tracker, "run_id", None))
    try:
        report = await runner.evaluate(contents)
        out = settings.output_dir
        resolved_yaml = out / "config.resolved.yaml"
        resolved_yaml.write_text(OmegaConf.to_yaml(components.resolved), encoding="utf-8")
        tracker.log_report(report, {"report": out / "report.json", "config": resolved_yaml})
    except BaseException:
        journal.close()
        tracker.end("FAILED")
        raise
    tracker.end("FINISHED")
    state.mark_completed(out / "report.json", getattr(tracker, "run_id", None))
    return report


def run(cfg: DictConfig) -> EvaluationReport:
    """Validate `cfg`, evaluate, track, and return the report (raises ConfigError early)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from heta_eval.console import print_summary
    from heta_eval.tracking.sweep import parent_run_id, read_sweep_id

    hydra_cfg = HydraConfig.get() if HydraConfig.initialized() else None
    if hydra_cfg is not None:
        scrub_hydra_outputs(cfg, hydra_cfg)
    components = assemble(cfg)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    parent = sweep_id = None
    if hydra_cfg is not None and hydra_cfg.mode == RunMode.MULTIRUN:
        parent = parent_run_id(hydra_cfg.sweep.dir)
        sweep_id = read_sweep_id(hydra_cfg.sweep.dir)
    overrides = list(hydra_cfg.overrides.task) if hydra_cfg is not None else []
    overrides = [mask_override(o) for o in overrides]  # they become tags and the run name
    report = asyncio.run(_execute(components, overrides, parent, sweep_id))
    print_summary(
        report,
        run_dir=str(components.settings.output_dir),
        tracking=components.tracker.describe(),
    )
    return report


def objective(report: EvaluationReport, metric: str | None) -> float | None:
    """The value a hyperparameter sweeper optimises: `optimized_metric` of the summary."""
    if not metric:
        return None
    if metric not in report.score_summary:
        raise ConfigError(
            f"optimized_metric: {metric!r} is not in the score summary; "
            f"available: {sorted(report.score_summary)}"
        )
    return report.score_summary[metric]


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")
def _hydra_main(cfg: DictConfig) -> float | None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from heta_eval.benchmarks.download import DownloadError
    from heta_eval.benchmarks.jsonl_files import BenchmarkDataError
    from heta_eval.runner import BenchmarkError

    try:
        return objective(run(cfg), cfg.get("optimized_metric"))
    except ConfigError as exc:
        print(f"heta-eval: invalid configuration\n{exc}", file=sys.stderr)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise
        sys.exit(2)
    except (BenchmarkError, BenchmarkDataError, DownloadError) as exc:
        # Data problems are the user's to fix; a traceback would hide the message.
        print(f"heta-eval: {exc}", file=sys.stderr)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise
        sys.exit(1)


def main() -> None:
    """Console entry point of `heta-eval`."""
    _hydra_main()
