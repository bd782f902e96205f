"""Runs of an experiment or a sweep as one pandas DataFrame (one row per run), for notebooks.

`load_runs()` reads MLflow directly; `heta-eval-runs` prints the table (`runs_table`) or
writes it to CSV, Parquet or JSON.

Columns: `run_id`, `run_name`, `status`, `start_time`, `end_time`, `experiment_id`, then
the tags as `tags.<key>` (tags repeat some param names, e.g. `recipe.name`, so they keep their
prefix), then the metrics and params under their own names (`ndcg_at_10`,
`bm25.ndcg_at_10`, `recipe.chunk_size`, `eval.top_k`). A name that is both a param and a
metric keeps MLflow's `params.` / `metrics.` prefix on both; `prefixes=True` keeps every
prefix. Param values are text in MLflow; a param column whose values all read as numbers
becomes numeric, and the value `null` (a config's None) becomes missing.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from heta_eval.results.suite_frame import load_suite_table
from heta_eval.results.sweep_ids import KIND_TAG, SWEEP_ID_FILE, SWEEP_ID_TAG, SWEEP_KIND
from heta_eval.results.sweep_rows import OVERRIDES_TAG
from heta_eval.tracking.http_bounds import bound_http_requests, unreachable
from heta_eval.tracking.mlflow_tracker import default_tracking_uri
from heta_eval.tracking.naming import is_location
from heta_eval.tracking.stores import known_stores

RUN_COLUMNS = ("run_id", "run_name", "status", "start_time", "end_time", "experiment_id")
PAGE = 1000
# Params that differ between runs for reasons other than what was evaluated.
_LOCATION_PARAMS = ("paths.", "tracking.", "hydra.", "runner.output_dir", "runner.store_dir",
                    "runner.state_dir", "runner.cache_dir", "runner.workspace_dir")  # fmt: skip
MAX_VARYING = 4


class RunsError(Exception):
    """The store, experiment or sweep asked for cannot be found."""


def resolve_tracking_uri(
    tracking_uri: str | None, root: str | os.PathLike[str] | None = "outputs"
) -> str:
    """The URI given, else MLFLOW_TRACKING_URI, else the SQLite store `{root}/mlflow.db`
    that `heta-eval` writes by default (which must exist). With `root` None (not chosen by
    the user) and no `./outputs/mlflow.db`, the store heta-eval wrote to last
    (`tracking.stores`), said on stderr."""
    import sys

    if tracking_uri or os.environ.get("MLFLOW_TRACKING_URI"):
        return str(tracking_uri or os.environ["MLFLOW_TRACKING_URI"])
    store = Path(root if root is not None else "outputs").expanduser() / "mlflow.db"
    if store.is_file():
        return default_tracking_uri(store.parent)
    recent = known_stores() if root is None else []
    if recent:
        print(
            f"no {store}: reading {recent[0]}, the store heta-eval wrote to last "
            "(--root or --tracking-uri choose another)",
            file=sys.stderr,
        )
        return recent[0]
    raise RunsError(
        f"no MLflow store at {store}: pass the --root that heta-eval wrote to "
        "(paths.root, default ./outputs) or --tracking-uri"
    )


def resolve_sweep_id(sweep: str | os.PathLike[str]) -> str:
    """A sweep id as given, or read from a sweep directory (`outputs/multiruns/...`)."""
    path = Path(sweep).expanduser()
    if path.is_dir():
        marker = path / SWEEP_ID_FILE
        if not marker.is_file():
            raise RunsError(f"{path} is not a tracked sweep directory (no {SWEEP_ID_FILE})")
        return marker.read_text(encoding="utf-8").strip()
    return str(sweep)


def _search(client: Any, experiment_id: str, filter_string: str) -> list[Any]:
    runs: list[Any] = []
    token = None
    while True:
        page = client.search_runs(
            [experiment_id],
            filter_string=filter_string,
            max_results=PAGE,
            order_by=["attributes.start_time ASC"],
            page_token=token,
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _numeric(values: list[Any]) -> list[Any]:
    """Param texts as numbers when every present value is one; `null` as missing."""
    cleaned = [None if v in (None, "null", "None") else v for v in values]
    present = [v for v in cleaned if v is not None]
    try:
        numbers = [float(v) for v in present]
    except ValueError:
        return cleaned
    if present and all(
        n.is_integer() and "." not in v for n, v in zip(numbers, present, strict=True)
    ):
        return [None if v is None else int(v) for v in cleaned]
    return [None if v is None else float(v) for v in cleaned]


def load_runs(
    experiment: str = "heta_eval",
    *,
    sweep_id: str | os.PathLike[str] | None = None,
    tracking_uri: str | None = None,
    root: str | os.PathLike[str] | None = "outputs",
    include_sweep_parents: bool = False,
    prefixes: bool = False,
    suite: str | None = None,
) -> Any:
    """The runs of `experiment` (or only those of one sweep) as a pandas DataFrame.

    `sweep_id` is the `heta_eval.sweep_id` tag of a sweep's runs, or the sweep's directory.
    The store is `tracking_uri`, else MLFLOW_TRACKING_URI, else `{root}/mlflow.db`. Sweep
    parent runs (which hold a sweep's summary) are left out unless `include_sweep_parents`.
    One row per run, oldest first; see the module docstring for the columns.

    `suite` (a suite name, or a suite sweep's id, directory or parent run id; "" for the
    latest suite sweep) returns that sweep's members x recipes table instead
    (`suite_frame.table_frame`).
    """
    if suite is not None:
        return load_suite_table(
            suite or None, experiment=experiment, tracking_uri=tracking_uri, root=root
        )
    import pandas as pd
    from mlflow import MlflowClient

    uri = resolve_tracking_uri(tracking_uri, root)
    bound_http_requests(uri)
    client = MlflowClient(tracking_uri=uri)
    try:
        found = client.get_experiment_by_name(experiment)
    except Exception as exc:  # a dead server, a refused connection, a broken store
        raise RunsError(unreachable(uri, exc)) from None
    if found is None:
        names = sorted(e.name for e in client.search_experiments())
        raise RunsError(f"no experiment {experiment!r} in {uri}; experiments: {names}")
    filter_string = ""
    if sweep_id is not None:
        sid = resolve_sweep_id(sweep_id)
        filter_string = f"tags.`{SWEEP_ID_TAG}` = '{sid}'"
    runs = _search(client, found.experiment_id, filter_string)
    if not include_sweep_parents:
        runs = [r for r in runs if r.data.tags.get(KIND_TAG) != SWEEP_KIND]
    if sweep_id is not None and not runs:
        raise RunsError(f"no runs of sweep {sid!r} in experiment {experiment!r} ({uri})")

    tag_keys = sorted({k for r in runs for k in r.data.tags if not k.startswith("mlflow.")})
    metric_keys = sorted({k for r in runs for k in r.data.metrics})
    param_keys = sorted({k for r in runs for k in r.data.params})
    clash = set() if prefixes else set(metric_keys) & set(param_keys)

    def metric_col(key: str) -> str:
        return f"metrics.{key}" if prefixes or key in clash else key

    def param_col(key: str) -> str:
        return f"params.{key}" if prefixes or key in clash else key

    columns: dict[str, list[Any]] = {
        "run_id": [r.info.run_id for r in runs],
        "run_name": [r.info.run_name for r in runs],
        "status": [r.info.status for r in runs],
        "start_time": [pd.to_datetime(r.info.start_time, unit="ms", utc=True) for r in runs],
        "end_time": [
            pd.to_datetime(r.info.end_time, unit="ms", utc=True) if r.info.end_time else pd.NaT
            for r in runs
        ],
        "experiment_id": [r.info.experiment_id for r in runs],
    }
    for key in tag_keys:
        columns[f"tags.{key}"] = [r.data.tags.get(key) for r in runs]
    # Mode-free headline metrics (no `.` or `/`) first, then the rest in name order.
    for key in sorted(metric_keys, key=lambda k: ("." in k or "/" in k, k)):
        columns[metric_col(key)] = [r.data.metrics.get(key) for r in runs]
    for key in param_keys:
        columns[param_col(key)] = _numeric([r.data.params.get(key) for r in runs])
    frame = pd.DataFrame(columns)
    # Which columns are metrics and which params, for callers that strip no prefixes.
    frame.attrs["metric_columns"] = [metric_col(k) for k in metric_keys]
    frame.attrs["param_columns"] = [param_col(k) for k in param_keys]
    return frame


def _overridden(frame: Any) -> list[str]:
    """Param columns that the runs' command lines set (`recipe=bm25` stands for recipe.name)."""
    keys: dict[str, None] = {}
    for line in frame.get(f"tags.{OVERRIDES_TAG}", _empty_series()).dropna():
        for override in str(line).split():
            key = override.partition("=")[0].lstrip("+~")
            keys.setdefault(key if "." in key else f"{key}.name", None)
    return list(keys)


def _empty_series() -> Any:
    """An empty pandas Series (the default of a missing column)."""
    import pandas as pd

    return pd.Series([], dtype=object)


def benchmark_column(frame: Any) -> str | None:
    """The column naming each run's benchmark (`eval.benchmark`, else the tag), if any."""
    for column in ("eval.benchmark", "params.eval.benchmark", "tags.benchmark.name"):
        if column in frame.columns:
            return column
    return None


def default_columns(frame: Any) -> list[str]:
    """What `heta-eval-runs` prints by default: the run name, status, the params the runs'
    command lines set that differ between the runs (`recipe=bm25` is `recipe.name`; when no
    override differs, up to MAX_VARYING other params that do, locations and descriptions
    left out), the headline score first, the other mode-free metrics, and the failed cases."""
    metrics = frame.attrs.get("metric_columns", [])
    params = frame.attrs.get("param_columns", [])
    headline = [c for c in metrics if "." not in c and "/" not in c]
    tagged = frame.get("tags.heta_eval.headline_metric", _empty_series()).dropna()
    if len(tagged):
        first = tagged.mode().iloc[0]
        headline = sorted(headline, key=lambda c: c != first)
    varying = [
        c
        for c in params
        if not c.removeprefix("params.").startswith(_LOCATION_PARAMS)
        and not c.endswith("description")
        and not _is_location_column(frame, c)
        and frame[c].astype(str).nunique(dropna=False) > 1
    ]
    overridden = [c for c in _overridden(frame) if c in varying]
    shown = overridden or varying[:MAX_VARYING]
    wanted = ["run_name", "status", *shown, *headline, "cases.failed"]
    if headline:
        frame.attrs["headline_column"] = headline[0]  # shown whatever the width
    return [c for c in wanted if c in frame.columns]


def _is_location_column(frame: Any, column: str) -> bool:
    """A param saying where something is (`benchmark.data_root`, a path or URI value)."""

    key = column.removeprefix("params.")
    values = frame[column].dropna().astype(str)
    return is_location(key, "") or any(is_location(key, v) for v in values.head(50))


def select_columns(frame: Any, patterns: Sequence[str]) -> list[str]:
    """Columns matching the shell-style `patterns`, in the order asked for (a pattern that
    matches several columns gives them in the frame's order); a pattern that matches
    nothing is an error naming it."""
    chosen: dict[str, None] = {}
    for pattern in patterns:
        matched = [c for c in frame.columns if fnmatch.fnmatchcase(c, pattern)]
        if not matched:
            names = [str(c) for c in frame.columns]
            near = difflib.get_close_matches(pattern, names, n=5, cutoff=0.7)
            stem = pattern.strip("*?").lower()
            near += [c for c in names if stem in c.lower() and c not in near][: 8 - len(near)]
            hint = f"; similar: {', '.join(near)}" if near else ""
            raise RunsError(
                f"--columns {pattern!r} matches no column{hint} "
                "(all columns: heta-eval-runs --output runs.csv)"
            )
        chosen.update(dict.fromkeys(matched))
    return list(chosen)


def write_frame(frame: Any, path: Path) -> Path:
    """Write the frame as CSV, Parquet or JSON records, chosen by the file's suffix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix in {".parquet", ".pq"}:
        frame.to_parquet(path, index=False)
    elif suffix == ".json":
        frame.to_json(path, orient="records", date_format="iso", indent=1)
    else:
        raise RunsError(f"--output {path}: expected a .csv, .parquet or .json file")
    return path
