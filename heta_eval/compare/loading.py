"""Where the compared reports come from (report.json files, MLflow runs, a sweep's
children), with the overrides and config that label them."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from heta_eval.compare.labels import differing_labels, split_overrides
from heta_eval.config.secrets import mask_override
from heta_eval.records import EvaluationReport
from heta_eval.tracking.http_bounds import bound_http_requests, is_missing, unreachable
from heta_eval.tracking.naming import flat_params
from heta_eval.tracking.stores import known_stores, store_exists

REPORT_FILE = "report.json"
CONFIG_FILE = "config.resolved.yaml"
HYDRA_OVERRIDES = Path(".hydra") / "overrides.yaml"
OVERRIDES_TAG = "heta_eval.overrides"  # set on each run by the lifecycle
SWEEP_KIND = "sweep"
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


class CompareError(ValueError):
    """A comparison that cannot be made as asked; the message says what to fix."""


@dataclass(frozen=True)
class LoadedRun:
    """One compared run: its report, a unique label, and where it came from.

    `source` is the reference as resolved (the report.json path or the MLflow run id);
    `run_id` is set for MLflow runs, `sweep_run_id` when the run was reached through a
    sweep's parent run. `overrides` are the command line's (Hydra) overrides and `config`
    the flattened resolved config (MLflow params or config.resolved.yaml), both empty when
    unknown; they name what differs between runs.
    """

    label: str
    report: EvaluationReport
    source: str
    run_id: str | None = None
    sweep_run_id: str | None = None
    overrides: tuple[str, ...] = ()
    config: Mapping[str, str] = field(default_factory=dict)
    tracking_uri: str | None = None  # the MLflow store the run was read from


def default_tracking_uri() -> str:
    """$MLFLOW_TRACKING_URI, else the SQLite store `outputs/mlflow.db` under the cwd."""
    return os.environ.get("MLFLOW_TRACKING_URI") or (
        f"sqlite:///{(Path.cwd() / 'outputs' / 'mlflow.db').resolve()}"
    )


def is_run_id(ref: str) -> bool:
    """Whether `ref` looks like an MLflow run id (32 lowercase hex characters)."""
    return bool(_RUN_ID.match(ref))


def read_report(path: Path) -> EvaluationReport:
    """Load a report.json, turning unreadable or invalid files into a CompareError."""
    try:
        return EvaluationReport.read_json(path)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise CompareError(
            f"{path} is not a valid report.json ({exc.error_count()} problem(s), first at "
            f"{where}: {first['msg']})"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CompareError(f"cannot read {path}: {exc}") from None


def _path_label(report: EvaluationReport, path: Path) -> str:
    name = str(report.recipe_manifest.get("name") or report.knowledge_base_name)
    return f"{name} ({path.parent.name})" if path.parent.name else name


def _local_context(run_dir: Path) -> tuple[tuple[str, ...], dict[str, str]]:
    """The overrides (Hydra's .hydra/overrides.yaml) and flattened config
    (config.resolved.yaml) written next to a report, when they are there and readable."""
    import yaml

    def load(path: Path) -> object:
        try:
            return yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            return None

    overrides = load(run_dir / HYDRA_OVERRIDES)
    config = load(run_dir / CONFIG_FILE)
    return (
        tuple(mask_override(str(o)) for o in overrides) if isinstance(overrides, list) else (),
        flat_params(config) if isinstance(config, dict) else {},
    )


def _load_path(ref: str) -> LoadedRun:
    path = Path(ref).expanduser()
    if path.is_dir():
        path = path / REPORT_FILE
        if not path.is_file():
            raise CompareError(f"{ref} is a directory without a {REPORT_FILE}")
    elif not path.is_file():
        raise CompareError(
            f"no such report: {ref} (give a report.json, its run directory, "
            "or a 32-character MLflow run id)"
        )
    path = path.resolve()
    report = read_report(path)
    overrides, config = _local_context(path.parent)
    return LoadedRun(
        label=_path_label(report, path),
        report=report,
        source=str(path),
        overrides=overrides,
        config=config,
    )


class _MlflowSource:
    """Reads runs and their report.json artifacts from one tracking URI (mlflow imported here)."""

    def __init__(self, uri: str) -> None:
        # An absent SQLite file would be created empty; say that the store is missing.
        if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).is_file():
            raise CompareError(f"no MLflow store at {uri} (give --tracking-uri)")
        import logging

        from mlflow import MlflowClient

        logging.getLogger("alembic").setLevel(logging.WARNING)
        # Downloading one small artifact per run needs no progress bar on stderr.
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        bound_http_requests(uri)
        self.uri = uri
        self.client = MlflowClient(tracking_uri=uri)
        self._tmp = tempfile.TemporaryDirectory(prefix="heta-eval-compare-")

    def run(self, run_id: str) -> Any:
        from mlflow.exceptions import MlflowException

        try:
            return self.client.get_run(run_id)
        except MlflowException as exc:
            if not is_missing(exc) and "not found" not in str(exc).lower():
                raise CompareError(unreachable(self.uri, exc)) from None
            raise CompareError(f"unknown MLflow run id {run_id} in {self.uri}") from None
        except Exception as exc:  # a dead server, a refused connection
            raise CompareError(unreachable(self.uri, exc)) from None

    def children(self, parent: Any) -> list[Any]:
        runs: list[Any] = []
        token = None
        while True:
            page = self.client.search_runs(
                [parent.info.experiment_id],
                filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'",
                order_by=["attributes.start_time ASC"],
                page_token=token,
            )
            runs.extend(page)
            token = page.token
            if not token:
                break
        runs.sort(key=lambda r: (r.info.start_time or 0, r.info.run_name or ""))
        return runs

    def report(self, run: Any) -> EvaluationReport:
        run_id = run.info.run_id
        names = {a.path for a in self.client.list_artifacts(run_id)}
        if REPORT_FILE not in names:
            raise CompareError(
                f"MLflow run {run_id} ({run.info.run_name}) has no {REPORT_FILE} artifact"
            )
        dest = Path(self._tmp.name) / run_id
        dest.mkdir(parents=True, exist_ok=True)
        local = self.client.download_artifacts(run_id, REPORT_FILE, str(dest))
        return read_report(Path(local))

    def close(self) -> None:
        self._tmp.cleanup()


def _unique_labels(runs: list[LoadedRun]) -> list[LoadedRun]:
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.label] = counts.get(run.label, 0) + 1
    seen: dict[str, int] = {}
    taken = {run.label for run in runs}
    unique: list[LoadedRun] = []
    for run in runs:
        label = run.label
        if counts[label] > 1:
            n = seen.get(label, 0) + 1
            seen[label] = n
            candidate = f"{label} #{n}"
            while candidate in taken:
                n += 1
                seen[label] = n
                candidate = f"{label} #{n}"
            taken.add(candidate)
            label = candidate
        unique.append(replace(run, label=label))
    return unique


def label_runs(runs: Sequence[LoadedRun]) -> list[LoadedRun]:
    """The runs labelled by what differs between them (`recipe=bm25` against
    `recipe=bm25_fusion`), else by their own names; labels are unique."""
    labels = differing_labels([r.overrides for r in runs], [r.config for r in runs])
    if labels is not None:
        runs = [replace(run, label=label) for run, label in zip(runs, labels, strict=True)]
    return _unique_labels(list(runs))


def _mlflow_run(run: Any, source: _MlflowSource, sweep: str | None) -> LoadedRun:
    run_id = run.info.run_id
    return LoadedRun(
        label=run.info.run_name or run_id,
        report=source.report(run),
        source=run_id,
        run_id=run_id,
        sweep_run_id=sweep,
        tracking_uri=source.uri,
        overrides=tuple(
            mask_override(o) for o in split_overrides(run.data.tags.get(OVERRIDES_TAG, ""))
        ),
        config=dict(run.data.params),
    )


def _find_run(run_id: str, tracking_uri: str | None) -> tuple[_MlflowSource, Any]:
    """The store holding `run_id`, and the run: `tracking_uri` when given, else
    $MLFLOW_TRACKING_URI or ./outputs/mlflow.db, then the stores heta-eval wrote to lately
    (`tracking.stores`), so that a run logged under another `paths.root` is found."""
    if tracking_uri:
        source = _MlflowSource(tracking_uri)
        try:
            return source, source.run(run_id)
        except CompareError:
            source.close()
            raise

    first = default_tracking_uri()
    looked: list[str] = []
    for uri in dict.fromkeys([first, *known_stores()]):
        if not store_exists(uri):
            continue
        looked.append(uri)
        try:
            source = _MlflowSource(uri)
        except CompareError:
            continue
        try:
            run = source.run(run_id)
        except CompareError:
            source.close()
            continue
        if uri != first:
            print(f"heta-eval-compare: run {run_id} found in {uri}", file=sys.stderr)
        return source, run
    where = ", ".join(looked) if looked else f"{first} (no such store)"
    raise CompareError(
        f"unknown MLflow run id {run_id}: not in {where}; give the store it was logged to "
        "with --tracking-uri (or MLFLOW_TRACKING_URI)"
    )


def load_reports(refs: Sequence[str], tracking_uri: str | None = None) -> list[LoadedRun]:
    """Load the runs `refs` name, in order, labelled by what differs between them.

    A reference is a report.json, a run directory holding one, or an MLflow run id; a sweep's
    parent run (tag `heta_eval.kind=sweep`) stands for its child runs, ordered by start time.
    MLflow (imported only when an id is given) is reached at `tracking_uri`, else
    $MLFLOW_TRACKING_URI, else `sqlite:///<cwd>/outputs/mlflow.db`.
    """
    source: _MlflowSource | None = None
    runs: list[LoadedRun] = []
    try:
        for ref in refs:
            if Path(ref).expanduser().exists() or not is_run_id(ref):
                runs.append(_load_path(ref))
                continue
            if source is None:
                source, run = _find_run(ref, tracking_uri)
            else:
                run = source.run(ref)
            if run.data.tags.get("heta_eval.kind") == SWEEP_KIND:
                # A resumed sweep may hold failed or killed attempts: compare finished jobs.
                children = [c for c in source.children(run) if c.info.status == "FINISHED"]
                if not children:
                    raise CompareError(f"sweep run {ref} has no finished child runs")
                runs.extend(_mlflow_run(child, source, ref) for child in children)
            else:
                runs.append(_mlflow_run(run, source, None))
    finally:
        if source is not None:
            source.close()
    return label_runs(runs)
