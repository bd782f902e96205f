"""Case-level results as one pandas DataFrame (one row per case, query mode and metric),
for your own paired analysis in a notebook.

`load_cases(source)` reads a `report.json` (or the run directory holding it), an
`EvaluationReport` in memory, or an MLflow run id (its case table `case_results.json`; its
`report.json` artifact when the run logged no case table); a list of sources gives one
frame with them all, told apart by `run_id` / `report_id`.

Columns: `run_id` (MLflow, or None), `report_id` (None from a case table), `benchmark`
(`name/version/split`), `recipe`, `unit_id`, `case_id`, `query_mode`, `metric`, `value`
(None when not scored), `status` (`scored`, `skipped`, `undetermined`, `failed`; from a
case table an unscored value is `not scored`, its reason from the table's `not_scored`
column), `skipped_reason`, `latency_seconds`, `latency_batch_size` (1: the query measured
alone; N: its batch of N queries' seconds over N, `runner.query_batch_size`; None: not
recorded), `error`, `query`, then one `label_<key>` column per slice label
(`label_difficulty`, ...).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationReport
from heta_eval.results.runs_frame import RunsError, resolve_tracking_uri

COLUMNS = (
    *("run_id", "report_id", "benchmark", "recipe", "unit_id", "case_id", "query_mode"),
    *("metric", "value", "status", "skipped_reason", "latency_seconds", "latency_batch_size"),
    *("error", "query"),
)
CASE_TABLE = "case_results.json"
REPORT = "report.json"
# Case table columns that are not metrics (labels are `label.<key>` or `label_<key>`).
_NOT_METRICS = {"case_id", "unit_id", "query_mode", "query", "latency_seconds", "error",
                "latency_batch_size", "answer", "top_documents", "not_scored"}  # fmt: skip
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")

Source = str | os.PathLike[str] | EvaluationReport


def _report_rows(report: EvaluationReport, run_id: str | None) -> Iterator[dict[str, Any]]:
    metrics = list(report.run.evaluators) or sorted(
        {s.name for r in report.case_results for s in r.scores}
    )
    recipe = str(report.recipe_manifest.get("name") or report.knowledge_base_name)
    for result in report.case_results:
        scores = {s.name: s for s in result.scores}
        error = result.error
        base = {
            "run_id": run_id,
            "report_id": report.report_id,
            "benchmark": report.benchmark.key,
            "recipe": recipe,
            "unit_id": result.unit_id,
            "case_id": result.case_id,
            "query_mode": result.query_mode,
            "latency_seconds": result.latency_seconds,
            "latency_batch_size": result.latency_batch_size,
            "error": None if error is None else f"{error.error_type}: {error.message}",
            "query": result.query,
            **{f"label_{k}": v for k, v in result.labels.items()},
        }
        for metric in metrics:
            score = scores.get(metric)
            if score is not None and score.value is not None:
                status = "scored"
            elif error is not None:
                status = "failed"
            elif score is not None and score.undetermined:
                status = "undetermined"
            else:
                status = "skipped"
            yield {
                **base,
                "metric": metric,
                "value": None if score is None else score.value,
                "status": status,
                "skipped_reason": None if score is None else score.skipped_reason,
            }


def _label(column: str) -> str | None:
    for prefix in ("label.", "label_"):
        if column.startswith(prefix):
            return column[len(prefix) :]
    return None


def _table_rows(table: dict[str, Any], run: Any) -> Iterator[dict[str, Any]]:
    """Rows of an MLflow case table (`{"columns": [...], "data": [[...], ...]}`)."""
    columns = list(table.get("columns") or [])
    metrics = [c for c in columns if c not in _NOT_METRICS and _label(c) is None]
    labels = [c for c in columns if _label(c) is not None]
    params = run.data.params
    for row in table.get("data") or []:
        record = dict(zip(columns, row, strict=True))
        base = {
            "run_id": run.info.run_id,
            "report_id": None,  # the case table does not say; report.json does
            "benchmark": params.get("eval.benchmark"),
            "recipe": run.data.tags.get("recipe.name"),
            "unit_id": record.get("unit_id"),
            "case_id": record.get("case_id"),
            "query_mode": record.get("query_mode"),
            "latency_seconds": record.get("latency_seconds"),
            "latency_batch_size": record.get("latency_batch_size"),
            "error": record.get("error"),
            "query": record.get("query"),
            **{f"label_{_label(c)}": record.get(c) for c in labels},
        }
        reasons = _reasons(record.get("not_scored"))
        for metric in metrics:
            value = record.get(metric)
            if value == "":  # an empty cell: not scored (`not_scored` says why)
                value = None
            status = "scored" if value is not None else "failed" if base["error"] else None
            yield {
                **base,
                "metric": metric,
                "value": None if value is None else float(value),
                "status": status or "not scored",
                "skipped_reason": None if value is not None else reasons.get(metric),
            }


def _reasons(text: object) -> dict[str, str]:
    """The case table's `not_scored` cell (`metric: reason; ...`) as a mapping."""
    if not isinstance(text, str) or not text:
        return {}
    found: dict[str, str] = {}
    for part in text.split("; "):
        metric, sep, reason = part.partition(": ")
        if sep:
            found[metric] = reason
    return found


def _report_file(path: Path) -> Path:
    if path.is_dir():
        path = path / REPORT
    if not path.is_file():
        raise RunsError(f"{path}: no report.json there (a run directory holds one)")
    return path


@contextlib.contextmanager
def _quiet_downloads() -> Iterator[None]:
    """Without MLflow's download progress bar (one per artifact, noise in a notebook)."""
    name = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
    before = os.environ.get(name)
    os.environ[name] = "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def _run_rows(run_id: str, client: Any) -> list[dict[str, Any]]:
    try:
        run = client.get_run(run_id)
    except Exception as exc:
        raise RunsError(f"MLflow run {run_id}: {str(exc).splitlines()[0]}") from None
    artifacts = {a.path for a in client.list_artifacts(run_id)}
    with tempfile.TemporaryDirectory() as tmp, _quiet_downloads():
        if CASE_TABLE in artifacts:
            path = Path(client.download_artifacts(run_id, CASE_TABLE, tmp))
            table = json.loads(path.read_text(encoding="utf-8"))
            return list(_table_rows(table, run))
        if REPORT in artifacts:
            path = Path(client.download_artifacts(run_id, REPORT, tmp))
            report = EvaluationReport.model_validate_json(path.read_text(encoding="utf-8"))
            return list(_report_rows(report, run_id))
    raise RunsError(
        f"MLflow run {run_id} has neither {CASE_TABLE} nor {REPORT} among its artifacts "
        f"(it has: {sorted(artifacts)})"
    )


def load_cases(
    source: Source | Sequence[Source],
    *,
    tracking_uri: str | None = None,
    root: str | os.PathLike[str] = "outputs",
) -> Any:
    """Case-level results of one or more runs as a pandas DataFrame, one row per case,
    query mode and metric (see the module docstring for the columns).

    A source is a `report.json` path or the run directory holding it, an
    `EvaluationReport`, or an MLflow run id, read from `tracking_uri`, else
    MLFLOW_TRACKING_URI, else `{root}/mlflow.db`.
    """
    import pandas as pd

    sources: list[Source] = (
        [source] if isinstance(source, str | os.PathLike | EvaluationReport) else list(source)
    )
    rows: list[dict[str, Any]] = []
    client = None
    for item in sources:
        if isinstance(item, EvaluationReport):
            tracked = item.run.tracking.run_id
            rows.extend(_report_rows(item, tracked))
            continue
        path = Path(item).expanduser()
        if path.exists():
            report_path = _report_file(path)
            report = EvaluationReport.model_validate_json(report_path.read_text(encoding="utf-8"))
            rows.extend(_report_rows(report, report.run.tracking.run_id))
        elif _RUN_ID.match(str(item)):
            if client is None:
                from mlflow import MlflowClient

                client = MlflowClient(tracking_uri=resolve_tracking_uri(tracking_uri, root))
            rows.extend(_run_rows(str(item), client))
        else:
            raise RunsError(
                f"{item}: not a report.json, a run directory or an MLflow run id "
                "(32 hexadecimal digits)"
            )
    frame = pd.DataFrame(rows)
    labels = sorted(c for c in frame.columns if c.startswith("label_"))
    return frame.reindex(columns=[*COLUMNS, *labels])
