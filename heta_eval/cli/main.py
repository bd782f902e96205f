"""The `heta-eval` command: a Hydra app that evaluates a recipe on a benchmark."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import hydra
from omegaconf import DictConfig, OmegaConf

from heta_eval.benchmarks.archives import ArchiveError
from heta_eval.benchmarks.download import DownloadError
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError
from heta_eval.cli.console import print_summary
from heta_eval.cli.hydra_errors import WRITE_ERRORS, describe_write_error, guard_hydra
from heta_eval.cli.log_files import quiet_failing_log_files
from heta_eval.cli.run_dir import discard_unused_run_dir
from heta_eval.cli.signals import exit_status, stop_on_sigterm
from heta_eval.config import config_dir
from heta_eval.config.hydra_outputs import mask_hydra_outputs, scrub_hydra_outputs
from heta_eval.config.resolve import ConfigError
from heta_eval.config.resolvers import register as register_resolvers
from heta_eval.config.secrets import mask_override
from heta_eval.results.sweep_ids import parent_run_id, read_sweep_id, read_swept_keys, swept_first
from heta_eval.run.assembly import assemble
from heta_eval.run.failures import FailureRateExceededError
from heta_eval.run.lifecycle import evaluate
from heta_eval.run.plan import dry_run
from heta_eval.run.runner import BenchmarkError
from heta_eval.tracking.naming import evaluated_overrides, is_location, plain_override

register_resolvers()  # the suites' ${heta_join:...} and ${heta_beir_datasets:...}

if TYPE_CHECKING:
    from heta_eval.records import EvaluationReport

log = logging.getLogger("heta_eval")


def run(cfg: DictConfig) -> EvaluationReport | None:
    """Validate `cfg`, evaluate, track, and return the report (raises ConfigError early);
    with `runner.dry_run`, print the plan instead and return None."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    quiet_failing_log_files()  # Hydra has set up the job's log file by now
    hydra_cfg = HydraConfig.get() if HydraConfig.initialized() else None
    if hydra_cfg is not None:
        scrub_hydra_outputs(cfg, hydra_cfg)
    if hydra_cfg is not None and hydra_cfg.mode == RunMode.MULTIRUN:
        check_search_objective(cfg, hydra_cfg)
    components = assemble(cfg)
    if components.settings.dry_run:
        dry_run(components)
        return None
    logging.getLogger("alembic").setLevel(logging.WARNING)
    parent = sweep_id = job_num = sweep_dir = None
    if hydra_cfg is not None and hydra_cfg.mode == RunMode.MULTIRUN:
        sweep_dir = Path(hydra_cfg.sweep.dir)
        parent = parent_run_id(sweep_dir)
        sweep_id = read_sweep_id(sweep_dir)
        job_num = int(hydra_cfg.job.num)
    overrides = list(hydra_cfg.overrides.task) if hydra_cfg is not None else []
    if hydra_cfg is not None and hydra_cfg.mode == RunMode.MULTIRUN:
        # What the sweep varies comes first in the run's name (cut at 60 characters).
        overrides = swept_first(overrides, read_swept_keys(hydra_cfg.sweep.dir))
    report = evaluate(
        components=components,
        overrides=overrides,
        parent_run_id=parent,
        sweep_id=sweep_id,
        sweep_job=job_num,
        sweep_dir=sweep_dir,
    )
    job = None
    if job_num is not None:
        kept = [
            plain_override(o)
            for o in evaluated_overrides(overrides)
            if not is_location(*plain_override(o).partition("=")[::2])
        ]
        shown = " ".join(mask_override(o) for o in kept)
        shown = shown or "no overrides"
        job = f"job #{job_num}: {shown}"
    print_summary(report, job)
    return report


def check_search_objective(cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """A search sweeper (Optuna) needs `optimized_metric`; refuse before the first trial."""

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
        raise ConfigError(
            f"optimized_metric: {metric!r} is not in the score summary; "
            f"available: {sorted(report.score_summary)}"
        )
    return report.score_summary[metric]


@hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")
def _hydra_main(cfg: DictConfig) -> float | None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        return objective(run(cfg), cfg.get("optimized_metric"))
    except ConfigError as exc:
        print(f"heta-eval: invalid configuration\n{exc}", file=sys.stderr)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise
        _discard_run_dir(cfg)
        sys.exit(2)
    except OSError as exc:
        if exc.errno not in WRITE_ERRORS:
            raise
        # A full disk, a file size limit or a read-only directory: say which file; what was
        # finished stays valid.
        print(f"heta-eval: {describe_write_error(exc)}", file=sys.stderr)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise
        sys.exit(1)
    except FailureRateExceededError as exc:
        if exc.report is not None and HydraConfig.get().mode != RunMode.MULTIRUN:
            print_summary(exc.report)
        print(f"heta-eval: {exc}", file=sys.stderr)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise
        sys.exit(1)
    except ArchiveError as exc:
        # A downloaded archive that cannot be extracted: named, one line (nothing is kept).
        print(f"heta-eval: {exc}", file=sys.stderr)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise
        _discard_run_dir(cfg)
        sys.exit(2)
    except (BenchmarkError, BenchmarkDataError, DownloadError) as exc:
        # Data problems are the user's to fix; a traceback would hide the message.
        print(f"heta-eval: {exc}", file=sys.stderr)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise
        _discard_run_dir(cfg)
        sys.exit(1)


def _discard_run_dir(cfg: DictConfig) -> None:
    """A run refused before it began: no run directory, no empty log (`cli.run_dir`)."""
    from hydra.core.hydra_config import HydraConfig

    try:
        root = OmegaConf.select(cfg, "paths.root", default=None)
        discard_unused_run_dir(HydraConfig.get().runtime.output_dir, root)
    except Exception as exc:  # the error being reported says more than this one
        log.debug("run directory left in place: %s", exc)


def main() -> None:
    """Console entry point of `heta-eval`: the Hydra app, with every Hydra flag as Hydra
    defines it (`heta-eval-info` lists our options)."""
    guard_hydra()
    mask_hydra_outputs(sys.argv[1:])  # secrets never reach Hydra's files or log lines
    if not {"-m", "--multirun"} & set(sys.argv[1:]):
        # A sweep's launching process has its own SIGTERM handling (sweep/callback.py).
        stop_on_sigterm()
    try:
        _hydra_main()
    except KeyboardInterrupt:
        status, name = exit_status()
        print(
            f"heta-eval: stopped by {name}; the case results finished so far are kept: run "
            "the same command again to resume",
            file=sys.stderr,
        )
        sys.exit(status)
