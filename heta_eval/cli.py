"""The `heta-eval` command: a Hydra app that evaluates a recipe on a benchmark."""

from __future__ import annotations

import contextlib
import errno
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hydra
from omegaconf import DictConfig, OmegaConf

from heta_eval import __version__
from heta_eval.async_run import run_sync

# The runner, the engine and pydantic are imported when a run starts, not for --help.
if TYPE_CHECKING:
    from heta_eval.assembly import RunComponents
    from heta_eval.records import EvaluationReport

log = logging.getLogger("heta_eval")
# Overrides that say where things go, not what is evaluated; left out of run names.
_NOT_IN_RUN_NAME = ("paths.", "tracking.", "hydra.", "runner.output_dir", "runner.store_dir")


def config_dir() -> Path:
    """The Hydra config groups: inside the package in a wheel, `conf/` in a source checkout."""
    packaged = Path(__file__).resolve().parent / "conf"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / "conf"


def _write_html_report(report: EvaluationReport, out: Path) -> dict[str, Path]:
    """Write report.html beside report.json; a failure to render never fails the run."""
    from heta_eval.reporting import REPORT_HTML, write_html_report

    try:
        return {"html": write_html_report(report, out / REPORT_HTML)}
    except Exception as exc:
        log.warning("could not write %s: %s: %s", out / REPORT_HTML, type(exc).__name__, exc)
        return {}


def _run_tags(
    components: RunComponents, overrides: list[str], sweep_id: str | None = None
) -> dict[str, str]:
    from heta_eval.code_version import git_commit

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
    from heta_eval.code_version import code_version
    from heta_eval.run_state import RunState

    settings = components.settings
    with RunState(settings.state_dir, components.config_hash, code_version()).lock():
        return await _execute_locked(components, overrides, parent_run_id, sweep_id)


async def _execute_locked(
    components: RunComponents,
    overrides: list[str],
    parent_run_id: str | None,
    sweep_id: str | None = None,
) -> EvaluationReport:
    from heta_eval.code_version import code_version
    from heta_eval.failure_policy import check_failure_rate
    from heta_eval.records import EvaluationReport
    from heta_eval.run_state import RunState

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
            _write_html_report(report, settings.output_dir)
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
        artifacts = {"report": out / "report.json", "config": resolved_yaml}
        artifacts.update(_write_html_report(report, out))
        tracker.log_report(report, artifacts)
        check_failure_rate(report, settings.max_failure_rate)
    except BaseException:
        with contextlib.suppress(OSError):  # the error being raised says more
            journal.close()
        tracker.end("FAILED")
        raise
    tracker.end("FINISHED")
    state.mark_completed(out / "report.json", getattr(tracker, "run_id", None))
    return report


def run(cfg: DictConfig) -> EvaluationReport | None:
    """Validate `cfg`, evaluate, track, and return the report (raises ConfigError early);
    with `runner.dry_run`, print the plan instead and return None."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from heta_eval.assembly import assemble
    from heta_eval.console import print_summary
    from heta_eval.hydra_outputs import scrub_hydra_outputs
    from heta_eval.secrets import mask_override
    from heta_eval.tracking.sweep import parent_run_id, read_sweep_id

    hydra_cfg = HydraConfig.get() if HydraConfig.initialized() else None
    if hydra_cfg is not None:
        scrub_hydra_outputs(cfg, hydra_cfg)
    if hydra_cfg is not None and hydra_cfg.mode == RunMode.MULTIRUN:
        check_search_objective(cfg, hydra_cfg)
    components = assemble(cfg)
    if components.settings.dry_run:
        from heta_eval.plan import dry_run

        dry_run(components)
        return None
    logging.getLogger("alembic").setLevel(logging.WARNING)
    parent = sweep_id = None
    if hydra_cfg is not None and hydra_cfg.mode == RunMode.MULTIRUN:
        parent = parent_run_id(hydra_cfg.sweep.dir)
        sweep_id = read_sweep_id(hydra_cfg.sweep.dir)
    overrides = list(hydra_cfg.overrides.task) if hydra_cfg is not None else []
    overrides = [mask_override(o) for o in overrides]  # they become tags and the run name
    report = run_sync(_execute(components, overrides, parent, sweep_id))
    print_summary(
        report,
        run_dir=str(components.settings.output_dir),
        tracking=components.tracker.describe(),
    )
    return report


def check_search_objective(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """A search sweeper (Optuna) needs `optimized_metric`; refuse before the first trial."""
    from heta_eval.assembly import ConfigError

    target = str(OmegaConf.select(hydra_cfg, "sweeper._target_", default="") or "")
    if "optuna" in target.lower() and not cfg.get("optimized_metric"):
        raise ConfigError(
            "optimized_metric: a value is required by the hyperparameter search "
            f"(hydra.sweeper: {target}); set optimized_metric={{query_mode}}.{{metric}}, "
            "e.g. optimized_metric=bm25.ndcg@10"
        )


def objective(report: EvaluationReport | None, metric: str | None) -> float | None:
    """The value a hyperparameter sweeper optimises: `optimized_metric` of the summary."""
    if not metric or report is None:
        return None
    if metric not in report.score_summary:
        from heta_eval.assembly import ConfigError

        raise ConfigError(
            f"optimized_metric: {metric!r} is not in the score summary; "
            f"available: {sorted(report.score_summary)}"
        )
    return report.score_summary[metric]


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")
def _hydra_main(cfg: DictConfig) -> float | None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from heta_eval.assembly import ConfigError
    from heta_eval.benchmarks.download import DownloadError
    from heta_eval.benchmarks.jsonl_files import BenchmarkDataError
    from heta_eval.failure_policy import FailureRateExceededError
    from heta_eval.runner import BenchmarkError

    try:
        return objective(run(cfg), cfg.get("optimized_metric"))
    except ConfigError as exc:
        print(f"heta-eval: invalid configuration\n{exc}", file=sys.stderr)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise
        sys.exit(2)
    except OSError as exc:
        if exc.errno not in _DISK_FULL:
            raise
        # A full disk or a file size limit: say which file; what was finished stays valid.
        print(f"heta-eval: {describe_write_error(exc)}", file=sys.stderr)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise
        sys.exit(1)
    except (BenchmarkError, BenchmarkDataError, DownloadError, FailureRateExceededError) as exc:
        # Data problems are the user's to fix; a traceback would hide the message.
        print(f"heta-eval: {exc}", file=sys.stderr)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise
        sys.exit(1)


_DISK_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def describe_write_error(exc: OSError) -> str:
    """`cannot write FILE: No space left on device ...` for a failed write."""
    where = exc.filename or "a file"
    return (
        f"cannot write {where}: {exc.strerror} (disk full or file size limit); "
        "results finished before it are kept: free space and run again to resume"
    )


def main() -> None:
    """Console entry point of `heta-eval` (`--info` lists the options, before Hydra starts)."""
    if "--info" in sys.argv[1:]:
        from heta_eval.info import main as info

        sys.exit(info(config_dir()))
    _hydra_main()
