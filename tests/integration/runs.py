"""Reading back what an in-process run left: the report it printed, its MLflow store."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient
from mlflow.entities import Run

from heta_eval.records import EvaluationReport


def report_path(stdout: str) -> Path:
    """The report.json a run printed (`report: PATH`)."""
    line = next(line for line in stdout.splitlines() if line.startswith("report: "))
    return Path(line.removeprefix("report: "))


def printed_report(stdout: str) -> EvaluationReport:
    """The report a run printed the path of, read back."""
    return EvaluationReport.read_json(report_path(stdout))


def mlflow_client(root: Path) -> MlflowClient:
    """A client of the SQLite MLflow store under `root` (`paths.root`)."""
    return MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")


def tracked_runs(root: Path) -> list[Run]:
    """Every run of the `heta_eval` experiment in the store under `root`."""
    client = mlflow_client(root)
    experiment = client.get_experiment_by_name("heta_eval")
    assert experiment is not None, f"no heta_eval experiment in {root / 'mlflow.db'}"
    return client.search_runs([experiment.experiment_id])
