"""Links into the MLflow UI: the runs table sorted by the headline score, a run's page.

MLflow 3 opens an experiment on its GenAI overview; `#/experiments/{id}/runs` is the runs
table itself, and `orderByKey`/`orderByAsc` sort it (the sort column is then shown).
"""

from __future__ import annotations

from urllib.parse import quote

LOCAL_UI = "http://127.0.0.1:5000"  # where `mlflow ui` / `mlflow server` listen by default


def ui_base(tracking_uri: str) -> str:
    """The UI's address for a store: the server itself for http(s), else `mlflow ui`'s."""
    if tracking_uri.startswith(("http://", "https://")):
        return tracking_uri.rstrip("/")
    return LOCAL_UI


def runs_table_url(base: str, experiment_id: str, headline: str | None = None) -> str:
    """The experiment's runs table, best `headline` first when given."""
    url = f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs"
    if headline:
        url += f"?orderByKey={quote(f'metrics.`{headline}`', safe='.')}&orderByAsc=false"
    return url


def run_url(base: str, experiment_id: str, run_id: str) -> str:
    """A run's page."""
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}"


def open_command(tracking_uri: str) -> str | None:
    """The command that serves the UI for a store that is not a server (None for a server)."""
    if tracking_uri.startswith(("http://", "https://")):
        return None
    return f"mlflow ui --backend-store-uri {tracking_uri}"
