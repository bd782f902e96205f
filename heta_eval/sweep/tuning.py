"""Honest tuning: after a hyperparameter search, the best configuration once on the test part.

`TuneThenTestCallback` (`hydra.callbacks.tune_then_test` in `conf/hparams_search/*.yaml`)
runs in the process that launched the search. The trials evaluate the tuning part of the
benchmark (`tuning.part=tune`: BEIR's `dev` or `train` qrels, or a seeded share of the
queries; see `heta_eval.benchmarks.splits`). When the search ends, it:
1. reads the sweeper's `optimization_results.yaml` and rewrites its best parameters with
   the types the trials got (the sweeper keeps Hydra's override text: `'null'` for None);
2. evaluates the best configuration once with `tuning.part=test`, as a `heta-eval` run of
   its own in `{sweep dir}/test` (its table is printed like any run's);
3. links the two in MLflow: the test run is tagged with the sweep's parent run, the parent
   with the test run and its `test/<metric>` score (with CI bounds);
4. prints which part each number is on, and adds the test result to the results file.
Hydra calls `on_multirun_end` only when every trial finished; a test run that fails makes
the command exit 1.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from heta_eval.records import EvaluationReport
from heta_eval.results.sweep_ids import parent_run_id
from heta_eval.tracking.naming import metric_name

log = logging.getLogger(__name__)

RESULTS_FILE = "optimization_results.yaml"
TEST_DIR = "test"
SWEEP_RUN_TAG = "heta_eval.tuning.sweep_run_id"  # on the test run
TEST_RUN_TAG = "heta_eval.tuning.test_run_id"  # on the sweep's parent run
PART_TAG = "heta_eval.tuning.part"


def typed_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The values the trials got: each `key=value` parsed as Hydra parses an override
    (`'null'` is None, `'64'` 64, `0.73` a float; a quoted string stays a string)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    typed = {}
    for key, value in params.items():
        (override,) = parser.parse_overrides([f"{key}={value}"])
        typed[key] = override.value()
    return typed


def _key(override: str) -> str:
    return override.partition("=")[0].lstrip("+~")


def final_overrides(
    task_overrides: Sequence[str], best_params: Mapping[str, Any], run_dir: Path
) -> list[str]:
    """The command line of the test run: the search's own overrides (those the search
    chose replaced by the best values), `tuning.part=test` and its run directory."""
    replaced = set(best_params) | {"tuning.part", "hydra.run.dir"}
    kept = [o for o in task_overrides if _key(o) not in replaced]
    best = [f"{key}={value}" for key, value in best_params.items()]
    return [*kept, *best, "++tuning.part=test", f"hydra.run.dir='{run_dir}'"]


def _report(path: Path) -> Any:

    return EvaluationReport.model_validate_json(path.read_text(encoding="utf-8"))


def _part(report: Any) -> str:
    """`name/version/split, N cases: what the part is` of a report."""
    note = report.benchmark.metadata.get("tuning", "")
    text = f"{report.benchmark.key}, {report.run.cases.evaluated} cases"
    return f"{text}: {note}" if note else text


def _best_trial(trials: dict[int, Any], metric: str, value: Any) -> tuple[int, Any] | None:
    """(job number, report) of the trial that reached the search's best value."""
    for number, report in trials.items():
        score = report.score_summary.get(metric)
        if score is not None and isinstance(value, float) and abs(score - value) < 1e-12:
            return number, report
    return None


def _score(report: Any, metric: str) -> str:
    detail = report.score_details.get(metric)
    if detail is None or detail.mean is None:
        return f"{metric} not scored"
    text = f"{metric} = {detail.mean:.4f}"
    if detail.ci_low is not None and detail.ci_high is not None:
        text += f" [{detail.ci_low:.4f}, {detail.ci_high:.4f}]"
    return text


def link_runs(report: Any, parent_run_id: str | None, metric: str) -> str | None:
    """Tag the test run with the sweep's parent and the parent with the test run and its
    score; the test run's id (None: it was not tracked)."""
    tracking = report.run.tracking
    if tracking.run_id is None or tracking.uri is None:
        return None
    from mlflow import MlflowClient
    from mlflow.entities import Metric, RunTag

    client = MlflowClient(tracking_uri=tracking.uri)
    test_tags = {PART_TAG: "test"}
    if parent_run_id is not None:
        test_tags[SWEEP_RUN_TAG] = parent_run_id
    client.log_batch(tracking.run_id, tags=[RunTag(k, v) for k, v in test_tags.items()])
    if parent_run_id is None:
        return tracking.run_id
    stamp = int(report.finished_at.timestamp() * 1000)
    detail = report.score_details.get(metric)
    values = {}
    if detail is not None and detail.mean is not None:
        name = f"test/{metric_name(metric)}"
        values = {name: detail.mean, f"{name}.ci_low": detail.ci_low}
        values[f"{name}.ci_high"] = detail.ci_high
    client.log_batch(
        parent_run_id,
        metrics=[Metric(k, float(v), stamp, 0) for k, v in values.items() if v is not None],
        tags=[RunTag(TEST_RUN_TAG, tracking.run_id), RunTag(PART_TAG, "tune")],
    )
    return tracking.run_id


class TuneThenTestCallback(Callback):
    """Hydra callback: evaluate a search's best configuration once on the test part."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        results_path = sweep_dir / RESULTS_FILE
        if not results_path.is_file():
            log.warning("%s not found: no best configuration to test", results_path)
            return
        results = OmegaConf.to_container(OmegaConf.load(results_path))
        assert isinstance(results, dict)
        raw = dict(results.get("best_params") or {})
        if not raw:
            log.warning("%s has no best_params (a multi-objective search?): no test", results_path)
            return
        metric = str(config.get("optimized_metric") or "")
        best = typed_params(raw)
        # The trials' reports (sub-directories named by job number; not test/).
        found = [p for p in sweep_dir.glob("*/report.json") if p.parent.name.isdigit()]
        trials = {int(p.parent.name): _report(p) for p in found}
        trials = dict(sorted(trials.items()))
        tuning_report = next(iter(trials.values()), None)
        tuned_on = _part(tuning_report) if tuning_report else "(no trial report found)"
        best_trial = _best_trial(trials, metric, results.get("best_value"))

        run_dir = sweep_dir / TEST_DIR
        command = [sys.executable, "-m", "heta_eval"]
        config_name = kwargs.get("config_name")
        if config_name and config_name != "config":
            command.append(f"--config-name={config_name}")
        task = [str(o) for o in config.hydra.overrides.task]
        command += final_overrides(task, raw, run_dir)
        print(
            f"search done: {len(trials)} trial(s) on the tuning part; evaluating the best "
            f"parameters once on the test part: {json.dumps(best)}",
            flush=True,
        )
        proc = subprocess.run(command, check=False)
        report_path = run_dir / "report.json"
        if proc.returncode != 0 or not report_path.is_file():
            print(
                f"heta-eval: the test run of the best parameters failed (exit "
                f"{proc.returncode}); its directory: {run_dir}",
                file=sys.stderr,
                flush=True,
            )
            raise SystemExit(1)  # not an Exception: Hydra would turn that into a warning
        report = _report(report_path)

        test_run = link_runs(report, parent_run_id(sweep_dir), metric)
        detail = report.score_details.get(metric)
        results["best_params"] = best
        results["tuning"] = {
            "benchmark": tuning_report.benchmark.key if tuning_report else None,
            "part": tuning_report.benchmark.metadata.get("tuning") if tuning_report else None,
            "cases": tuning_report.run.cases.evaluated if tuning_report else None,
            "trials": len(trials),
        }
        results["test"] = {
            "benchmark": report.benchmark.key,
            "part": report.benchmark.metadata.get("tuning"),
            "cases": report.run.cases.evaluated,
            "metric": metric,
            "value": None if detail is None else detail.mean,
            "ci_low": None if detail is None else detail.ci_low,
            "ci_high": None if detail is None else detail.ci_high,
            "report": str(report_path),
            "mlflow_run_id": test_run,
        }
        OmegaConf.save(OmegaConf.create(results), results_path)
        if best_trial is not None:
            best_line = f"{_score(best_trial[1], metric)}, trial #{best_trial[0]} of {len(trials)}"
        else:
            best_line = f"{metric} = {results.get('best_value')} over {len(trials)} trial(s)"
        lines = [
            f"tuning part: {tuned_on}",
            f"  best {best_line}",
            f"test part:   {_part(report)}",
            f"  {_score(report, metric)}, the best parameters evaluated once",
            f"best parameters: {json.dumps(best)}",
        ]
        if test_run:
            lines.append(f"MLflow: test run {test_run}, tagged with the search's parent run")
        lines.append(f"results: {results_path}")
        print("\n".join(lines), flush=True)
