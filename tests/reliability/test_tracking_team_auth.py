"""The authenticated team server (issue 23, item 22): `mlflow server --app-name basic-auth`,
real, on 127.0.0.1 with its own SQLite auth database and backend store.

With `MLFLOW_TRACKING_USERNAME`/`MLFLOW_TRACKING_PASSWORD`, heta-eval, a sweep,
heta-eval-runs, heta-eval-compare and heta-eval-sync work and the password is written
nowhere; without credentials the server answers 401, and a user without EDIT permission on
another's experiment gets 403: each said in one clear line, and the run directory marked
unsynced (`tracking.json`), from which it is replayed once someone with access syncs it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow import MlflowClient

from ..team_servers import mlflow_server
from ..tracking_readback import record_of
from .processes import Finished, cli_env, run_cli

# A real basic-auth MLflow server; heta-eval and its tools as real processes.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ADMIN = ("admin", "admin-Pw-7c1e5d")
ALICE = ("alice", "alice-Pw-3f9a2b81")
BOB = ("bob", "bob-Pw-58d0e4c7")


@dataclass(frozen=True)
class AuthServer:
    """A running basic-auth MLflow server and its users' environments."""

    url: str

    def env(self, user: tuple[str, str] | None) -> dict[str, str]:
        if user is None:
            return {}
        return {"MLFLOW_TRACKING_USERNAME": user[0], "MLFLOW_TRACKING_PASSWORD": user[1]}

    def client(self, user: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> MlflowClient:
        for key, value in self.env(user).items():
            monkeypatch.setenv(key, value)
        return MlflowClient(tracking_uri=self.url)


def _post(url: str, body: dict, user: tuple[str, str]) -> None:
    token = base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


@contextlib.contextmanager
def _basic_auth_server(home: Path) -> Iterator[str]:
    config = home / "basic_auth.ini"
    config.write_text(
        "[mlflow]\n"
        "default_permission = READ\n"
        f"database_uri = sqlite:///{home / 'auth.db'}\n"
        f"admin_username = {ADMIN[0]}\n"
        f"admin_password = {ADMIN[1]}\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
        # Remember a checked login for 10 minutes (MLflow's default, 0, hashes the password
        # with scrypt again on every request: 0.1 CPU s each, most of this module's time).
        # A wrong password is never remembered, so every refusal here is still checked.
        "auth_cache_ttl_seconds = 600\n"
    )
    env = cli_env(
        MLFLOW_AUTH_CONFIG_PATH=str(config), MLFLOW_FLASK_SERVER_SECRET_KEY="test-only-key"
    )
    with mlflow_server(
        f"sqlite:///{home / 'mlflow.db'}",
        home / "artifacts",
        env,
        extra_args=("--app-name", "basic-auth"),
        workers=1,
    ) as url:
        yield url


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthServer]:
    home = tmp_path_factory.mktemp("basic-auth")
    with _basic_auth_server(home) as url:
        for user in (ALICE, BOB):
            body = {"username": user[0], "password": user[1]}
            _post(f"{url}/api/2.0/mlflow/users/create", body, ADMIN)
        yield AuthServer(url)


def _tool(module: str, *args: str, cwd: Path, **env: str) -> Finished:
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=cli_env(MLFLOW_HTTP_REQUEST_MAX_RETRIES="0", **env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return Finished(proc.returncode, proc.stdout, proc.stderr)


def _written(root: Path, done: list[Finished], needle: str) -> list[str]:
    """Files under root and output streams that hold `needle`."""
    found = [str(p) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]
    return found + [f"output {i}" for i, d in enumerate(done) if needle in d.stdout + d.stderr]


def test_with_credentials_every_command_works_and_the_password_is_written_nowhere(
    auth_server: AuthServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "outputs"
    alice = auth_server.env(ALICE)
    uri = f"tracking.uri={auth_server.url}"
    experiment = "tracking.experiment=alice-auth"
    single = run_cli(root, tmp_path, uri, experiment, "runner.limit=2", **alice)
    assert single.returncode == 0, single.stderr
    assert "NOT IN MLFLOW" not in single.stdout and f"{auth_server.url}/#/experiments/" in (
        single.stdout
    )
    sweep = run_cli(
        root, tmp_path, "-m", uri, experiment, "runner.limit=2", "runner.top_k=3,5", **alice
    )
    assert sweep.returncode == 0, sweep.stderr
    assert "NOT IN MLFLOW" not in sweep.stdout
    client = auth_server.client(ALICE, monkeypatch)
    found = client.get_experiment_by_name("alice-auth")
    runs = client.search_runs([found.experiment_id])
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(children) == 2 and all(r.info.status == "FINISHED" for r in runs)
    assert "report.json" in {a.path for a in client.list_artifacts(children[0].info.run_id)}
    listed = _tool(
        "heta_eval.cli.runs",
        *("--tracking-uri", auth_server.url, "--experiment", "alice-auth"),
        cwd=tmp_path,
        **alice,
    )
    assert listed.returncode == 0, listed.stderr
    assert "3 runs" in listed.stdout and listed.stdout.count("FINISHED") == 3, listed.stdout
    compared = _tool(
        "heta_eval.cli.compare",
        *(r.info.run_id for r in children),
        *("--tracking-uri", auth_server.url, "--resamples", "200", "--out", str(root / "cmp")),
        cwd=tmp_path,
        **alice,
    )
    assert compared.returncode == 0, compared.stderr
    assert (root / "cmp" / "comparison.md").is_file()
    done = [single, sweep, listed, compared]
    assert _written(root, done, ALICE[1]) == []


def test_without_credentials_401_is_said_and_the_tracking_kept_then_synced(
    auth_server: AuthServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "outputs"
    done = run_cli(root, tmp_path, f"tracking.uri={auth_server.url}", "runner.limit=2")
    assert done.returncode == 0, done.stderr
    login = (
        f"MLflow at {auth_server.url} requires a login (HTTP 401: not authenticated); set "
        "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN)"
    )
    assert f"tracking: NOT IN MLFLOW ({login}" in done.stdout
    run_dir = done.report_path.parent
    record = record_of(run_dir)
    assert record.status == "FINISHED" and not record.synced and record.run_id is None
    assert login in record.reason
    listed = _tool("heta_eval.cli.runs", "--tracking-uri", auth_server.url, cwd=tmp_path)
    assert listed.returncode != 0 and login in listed.stderr, listed.stderr
    assert "Traceback" not in listed.stderr
    wrong = _tool(
        "heta_eval.cli.sync",
        *("--root", str(root)),
        cwd=tmp_path,
        MLFLOW_TRACKING_USERNAME=ALICE[0],
        MLFLOW_TRACKING_PASSWORD="not-her-password",
    )
    assert wrong.returncode == 1
    assert "refused the credentials of user 'alice' (MLFLOW_TRACKING_USERNAME)" in wrong.stdout
    assert "not-her-password" not in wrong.stdout + wrong.stderr
    synced = _tool(
        "heta_eval.cli.sync", "--root", str(root), cwd=tmp_path, **auth_server.env(ALICE)
    )
    assert synced.returncode == 0 and "synced 1 run(s), 0 failed" in synced.stdout, synced.stdout
    client = auth_server.client(ALICE, monkeypatch)
    record = record_of(run_dir)
    assert record.synced and record.run_id is not None
    run = client.get_run(record.run_id)
    assert run.info.status == "FINISHED"
    assert "report.json" in {a.path for a in client.list_artifacts(run.info.run_id)}


def test_a_user_without_edit_permission_gets_403_and_the_tracking_is_kept(
    auth_server: AuthServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = auth_server.client(ALICE, monkeypatch)
    with contextlib.suppress(Exception):
        alice.create_experiment("alice-private")
    root = tmp_path / "outputs"
    done = run_cli(
        root,
        tmp_path,
        f"tracking.uri={auth_server.url}",
        "tracking.experiment=alice-private",
        "runner.limit=2",
        **auth_server.env(BOB),
    )
    assert done.returncode == 0, done.stderr
    refused = (
        f"MLflow at {auth_server.url} refused user 'bob' (MLFLOW_TRACKING_USERNAME) (HTTP 403: "
        "permission denied) on experiment 'alice-private'; logging a run needs EDIT permission"
    )
    assert f"tracking: NOT IN MLFLOW ({refused}" in done.stdout, done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    record = record_of(done.report_path.parent)
    assert record.status == "FINISHED" and not record.synced and refused in record.reason
    again = _tool("heta_eval.cli.sync", "--root", str(root), cwd=tmp_path, **auth_server.env(BOB))
    assert again.returncode == 1 and refused in again.stdout, again.stdout
    assert _written(root, [done, again], BOB[1]) == []
    # Nothing was lost: the owner of the experiment uploads it.
    owner = _tool("heta_eval.cli.sync", "--root", str(root), cwd=tmp_path, **auth_server.env(ALICE))
    assert owner.returncode == 0 and "synced 1 run(s), 0 failed" in owner.stdout, owner.stdout
    experiment = alice.get_experiment_by_name("alice-private")
    (run,) = alice.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.data.metrics
