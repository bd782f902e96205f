"""A suite sweep's table read back from MLflow (`suite_table.json` on its parent run): as a
`SuiteTable` (printed by `heta-eval-runs --suite`) or a pandas DataFrame
(`heta_eval.load_runs(suite=...)`, `load_suite_table`)."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from heta_eval.records.suite import SuiteDefinition, SuiteReference
from heta_eval.results.suite_render import MACRO, SUITE_FILES
from heta_eval.results.suite_table import SUITE_TAG, Cell, ReferenceRow, SuiteTable
from heta_eval.results.sweep_ids import KIND_TAG, SWEEP_ID_TAG, SWEEP_KIND, read_sweep_id
from heta_eval.tracking.http_bounds import bound_http_requests
from heta_eval.tracking.mlflow_tracker import default_tracking_uri

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


class SuiteTableError(Exception):
    """No suite sweep (or no table) where one was asked for."""


def _tracking_uri(tracking_uri: str | None, root: str | os.PathLike[str]) -> str:
    """The URI given, else MLFLOW_TRACKING_URI, else the store `{root}/mlflow.db` (as
    `heta-eval-runs` finds it; the store must exist)."""

    if tracking_uri or os.environ.get("MLFLOW_TRACKING_URI"):
        return str(tracking_uri or os.environ["MLFLOW_TRACKING_URI"])
    if not (Path(root).expanduser() / "mlflow.db").is_file():
        raise SuiteTableError(
            f"no MLflow store at {Path(root) / 'mlflow.db'}: pass the --root that heta-eval "
            "wrote to (paths.root, default ./outputs) or --tracking-uri"
        )
    return default_tracking_uri(Path(root).expanduser())


def _sweep_id(which: str) -> str:
    """A sweep id, or the one a sweep directory holds."""

    path = Path(which).expanduser()
    return (read_sweep_id(path) or which) if path.is_dir() else which


def find_suite_parent(client: Any, experiment_id: str, which: str | None) -> Any:
    """The parent run of a suite sweep: `which` is its run id, its sweep id or directory, or
    a suite name (its latest sweep); None: the latest suite sweep of the experiment."""

    if which and _RUN_ID.match(which):
        return client.get_run(which)
    base = f"tags.`{KIND_TAG}` = '{SWEEP_KIND}'"
    filters = [f"{base} and tags.`{SUITE_TAG}` != ''"]
    if which:
        sid = _sweep_id(which)
        filters = [
            f"{base} and tags.`{SWEEP_ID_TAG}` = '{sid}'",
            f"{base} and tags.`{SUITE_TAG}` = '{which}'",
        ]
    for filter_string in filters:
        runs = client.search_runs(
            [experiment_id],
            filter_string=filter_string,
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        if runs and runs[0].data.tags.get(SUITE_TAG):
            return runs[0]
    what = f"{which!r}" if which else "any suite"
    raise SuiteTableError(f"no suite sweep for {what} in experiment {experiment_id}")


def read_table(client: Any, run_id: str) -> SuiteTable:
    """The `SuiteTable` logged on a suite sweep's parent run."""
    name = SUITE_FILES["json"]
    if not any(a.path == name for a in client.list_artifacts(run_id)):
        raise SuiteTableError(f"run {run_id} has no {name} (did the sweep finish?)")
    with tempfile.TemporaryDirectory() as tmp:
        data = json.loads(Path(client.download_artifacts(run_id, name, tmp)).read_text("utf-8"))
    table = SuiteTable(
        suite=SuiteDefinition.model_validate(data["definition"]),
        metric=data["metric"],
        members=list(data["members"]),
        columns=list(data["columns"]),
        failed=list(data.get("failed", [])),
    )
    for c in data["cells"]:
        table.cells[(c["member"], c["column"])] = Cell(
            c["run_id"], c["value"], c["ci_low"], c["ci_high"], c["scored"]
        )
    ref_fields = set(SuiteReference.model_fields)
    for r in data["references"]:
        reference = SuiteReference.model_validate({k: v for k, v in r.items() if k in ref_fields})
        table.references.append(
            ReferenceRow(
                reference, r["column"], r["run_id"], r["ours"], r["scored_cases"], r["note"]
            )
        )
    return table


def table_frame(table: SuiteTable, parent_run_id: str = "") -> Any:
    """The table as a DataFrame: one row per member and the macro average; per column its
    mean, `.ci_low` and `.ci_high`; the headline reference (`published`, `published.recipe`)
    and `delta`. `attrs`: suite, metric, parent_run_id and every reference row."""
    import pandas as pd

    records = []
    for member in table.members:
        record: dict[str, Any] = {"member": member}
        for column in table.columns:
            cell = table.cells.get((member, column))
            record[column] = cell.value if cell else None
            record[f"{column}.ci_low"] = cell.ci_low if cell else None
            record[f"{column}.ci_high"] = cell.ci_high if cell else None
        record.update({"published": None, "published.recipe": None, "delta": None})
        for column in table.columns:
            ref = table.headline_reference(member, column)
            if ref is not None:
                record.update(
                    {
                        "published": ref.reference.value,
                        "published.recipe": ref.reference.recipe,
                        "delta": ref.delta,
                    }
                )
                break
        records.append(record)
    macro: dict[str, Any] = {"member": MACRO}
    for column in table.columns:
        mean, low, high, _ = table.macro(column)
        macro.update({column: mean, f"{column}.ci_low": low, f"{column}.ci_high": high})
    records.append(macro)
    frame = pd.DataFrame.from_records(records).set_index("member")
    frame.attrs.update(
        suite=table.suite.name,
        metric=table.metric,
        parent_run_id=parent_run_id,
        references=[
            {
                **ref.reference.model_dump(mode="json"),
                "column": ref.column,
                "ours": ref.ours,
                "delta": ref.delta,
                "ok": ref.ok,
            }
            for ref in table.references
        ],
    )
    return frame


def load_suite(
    which: str | None = None,
    *,
    experiment: str = "heta_eval",
    tracking_uri: str | None = None,
    root: str | os.PathLike[str] = "outputs",
) -> tuple[SuiteTable, str]:
    """The table of a suite sweep (see `find_suite_parent` for `which`) and its parent id."""
    from mlflow import MlflowClient

    uri = _tracking_uri(tracking_uri, root)
    bound_http_requests(uri)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise SuiteTableError(f"no experiment {experiment!r} in {uri}")
    parent = find_suite_parent(client, found.experiment_id, which)
    return read_table(client, parent.info.run_id), parent.info.run_id


def load_suite_table(which: str | None = None, **kwargs: Any) -> Any:
    """The members x recipes table of a suite sweep as a DataFrame (see `table_frame`)."""
    table, parent = load_suite(which, **kwargs)
    return table_frame(table, parent)
