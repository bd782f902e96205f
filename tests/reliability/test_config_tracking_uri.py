"""Credentials inside the tracking URI (issue 36, item 6): `tracking.uri=http://alice:PW@host`
put the password in clear into report.json, the state's copy, done.json and tracking.json,
and the failure said "Name or service not known". Now a server URI with a password is
refused before any work, pointing at MLFLOW_TRACKING_USERNAME/PASSWORD; a URI that must
carry one (a database store's) is masked in every record written."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from heta_eval.records import TrackingRef
from heta_eval.records.run import ReusedFrom
from heta_eval.run.state import TrackingMarker

from ..conftest import InProcessCli


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_server_uri_with_a_password_is_refused_pointing_at_the_variables(
    cli: InProcessCli, tmp_path: Path, scheme: str
) -> None:
    password = f"pw{uuid.uuid4().hex}"
    done = cli(f"tracking.uri={scheme}://alice:{password}@127.0.0.1:9")
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        f"tracking.uri: {scheme}://alice:***@127.0.0.1:9 has a password in it, which would be "
        "written into the run directory, the reports and the logs; give the URI without "
        "credentials and set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"
    ) in done.stderr
    assert password not in done.stdout + done.stderr
    assert not (tmp_path / "outputs").exists()


def test_the_environments_tracking_uri_is_held_to_the_same_rule(
    cli: InProcessCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://bob:secret-pw-1@127.0.0.1:9")
    done = cli()
    assert done.returncode == 2, done.stdout + done.stderr
    assert "MLFLOW_TRACKING_URI: http://bob:***@127.0.0.1:9 has a password in it" in done.stderr
    assert "secret-pw-1" not in done.stdout + done.stderr


def test_a_database_uri_is_masked_in_every_record_written() -> None:
    uri = "postgresql://alice:dbpass123@db.example/mlflow"
    masked = "postgresql://alice:***@db.example/mlflow"
    assert TrackingRef(uri=uri, run_id="r").uri == masked  # report.json, the state's copy
    reused = ReusedFrom(report_id="x", finished_at="2026-01-01T00:00:00Z", tracking_uri=uri)
    assert reused.tracking_uri == masked
    assert TrackingMarker(uri=uri, run_id="r").uri == masked  # state tracking.json
