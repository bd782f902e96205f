"""An MLflow tracking server that is down at the start, or dies mid-run: the evaluation ends,
its run directory holds everything and is marked unsynced (`tracking.json`: synced false,
with the reason), and `heta-eval-sync --root` replays it once the server is back, exactly
once, into a run equal to the run directory (the run made before the outage, if any).

A real `mlflow server` (SQLite store, served artifacts) on 127.0.0.1, killed with SIGKILL and
restarted on the same port. The runs that need no server are `heta-eval` called in this
process (the `cli` fixture); the run whose server dies under it is a real process, held
halfway (tests/gates.py) while the server is killed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval import EvaluationReport
from heta_eval.tracking.run_record import write_record

from ..conftest import InProcessCli
from ..gates import pause_after, wait_for_file
from ..tracking_readback import (
    all_runs,
    assert_run_matches_directory,
    heta_eval_sync,
    record_of,
)
from .conftest import report_path
from .processes import Finished, MlflowServer, free_port, mlflow_server, start_cli

REUSED_TAG = "heta_eval.reused_from.run_id"


@pytest.fixture(autouse=True)
def _quick_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """MlflowClient (this process's and the runs') gives up on a dead server at once."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")


def _offline_run(cli: InProcessCli, root: Path, port: int) -> Path:
    """A run against a server that is not there: it ends, its directory is marked unsynced;
    its run directory."""
    done = cli(f"tracking.uri=http://127.0.0.1:{port}", "runner.limit=10", root=root)
    assert done.returncode == 0, done.stderr
    assert "tracking: NOT IN MLFLOW (" in done.stdout
    assert f"heta-eval-sync --root {root}" in done.stdout
    run_dir = report_path(done.stdout).parent
    assert EvaluationReport.read_json(run_dir / "report.json").case_results
    return run_dir


def test_server_down_at_start_marks_the_run_directory_unsynced(
    cli: InProcessCli, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "outputs"
    run_dir = _offline_run(cli, root, free_port())
    record = record_of(run_dir)
    assert not record.synced and record.run_id is None and record.status == "FINISHED"
    assert record.reason  # why: the connection was refused
    assert record.tags["benchmark.name"] == "sample" and record.tags["recipe.name"] == "bm25"
    assert record.params["runner.limit"] == "10"
    assert {p.name for p in run_dir.iterdir()} >= {
        "report.json",
        "report.html",
        "config.resolved.yaml",
        "tracking.json",
    }
    # A rerun reuses the finished result; the reuse is a run directory of its own (unsynced
    # too, since this server is down as well), naming the report it comes from.
    again = cli(f"tracking.uri=http://127.0.0.1:{free_port()}", "runner.limit=10", root=root)
    assert again.returncode == 0 and "already evaluated" in again.stdout + again.stderr
    reused_dir = report_path(again.stdout).parent
    assert reused_dir != run_dir
    reused = record_of(reused_dir)
    assert not reused.synced and reused.status == "FINISHED"
    report = EvaluationReport.read_json(run_dir / "report.json")
    assert reused.tags["heta_eval.reused_from.report_id"] == report.report_id
    assert reused.tags[REUSED_TAG] == ""  # the original has no MLflow run (yet)

    # Servers still down: the sync says so within seconds, keeps the directories unsynced,
    # and fails.
    down = heta_eval_sync(capsys, "--root", str(root))
    assert down.returncode == 1 and "NOT replayed" in down.stdout
    assert "synced 0 run(s), 2 failed, 0 waiting" in down.stdout
    assert not record_of(run_dir).synced and not record_of(reused_dir).synced


@pytest.mark.slow  # starts an MLflow server (~10-20 s)
def test_server_down_at_start_then_synced_once(
    cli: InProcessCli, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "outputs"
    port = free_port()
    run_dir = _offline_run(cli, root, port)

    with mlflow_server(tmp_path / "server", port) as server:
        client = MlflowClient(tracking_uri=server.uri)
        synced = heta_eval_sync(capsys, "--root", str(root))
        assert synced.returncode == 0, synced.stdout + synced.stderr
        assert "synced 1 run(s), 0 failed" in synced.stdout
        (run,) = all_runs(server.uri)
        assert_run_matches_directory(client, run.info.run_id, run_dir)
        record = record_of(run_dir)
        assert record.synced and record.run_id == run.info.run_id

        again = heta_eval_sync(capsys, "--root", str(root))
        assert again.returncode == 0 and "synced 0 run(s)" in again.stdout

        # A sync stopped after creating the run but before writing the record: the repeat
        # finds the run by its run directory tag and adds nothing twice.
        write_record(run_dir, record.model_copy(update={"run_id": None, "synced": False}))
        repeated = heta_eval_sync(capsys, "--root", str(root))
        assert repeated.returncode == 0 and "synced 1 run(s)" in repeated.stdout
        (same,) = all_runs(server.uri)
        assert same.info.run_id == run.info.run_id
        assert_run_matches_directory(client, run.info.run_id, run_dir)


@pytest.mark.slow  # starts an MLflow server twice; the run is a real process
def test_server_killed_mid_run_then_synced_into_the_same_run(
    cli: InProcessCli, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "outputs"
    paused, gate = tmp_path / "paused", tmp_path / "gate"
    server = MlflowServer(tmp_path / "server", free_port())
    server.start()
    try:
        client = MlflowClient(tracking_uri=server.uri)
        victim = start_cli(
            root,
            tmp_path,
            f"tracking.uri={server.uri}",
            "runner.limit=30",
            "runner.max_concurrent_queries=1",
            pause_after(paused, gate, after=5),
        )
        # Halfway: the server has the run and its params (the run is created before the
        # evaluation), five cases are scored and the run waits at the gate.
        wait_for_file(paused, victim)
        (started,) = all_runs(server.uri)
        assert started.data.params and started.info.status == "RUNNING"
        server.kill()
        gate.touch()
        out, err = victim.communicate(timeout=300)
        assert victim.returncode == 0, err
        done = Finished(victim.returncode, out, err)
        assert "tracking: NOT IN MLFLOW (" in out and "heta-eval-sync" in out
        said = out + err
        assert "failed (" in said and "marked unsynced" in said  # the warning, with why
        run_dir = done.report_path.parent
        record = record_of(run_dir)
        assert record.run_id == started.info.run_id and record.status == "FINISHED"
        assert not record.synced and record.reason

        server.start()
        synced = heta_eval_sync(capsys, "--root", str(root))
        assert synced.returncode == 0, synced.stdout + synced.stderr
        assert f"-> run {started.info.run_id}" in synced.stdout
        (run,) = all_runs(server.uri)  # the run made before the outage, not a second one
        assert_run_matches_directory(client, run.info.run_id, run_dir)
        assert "synced 0 run(s)" in heta_eval_sync(capsys, "--root", str(root)).stdout
    finally:
        server.kill()


@pytest.mark.slow  # a sweep of two jobs
def test_a_sweep_goes_on_when_the_server_is_down(cli: InProcessCli, tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    done = cli(
        "-m",
        f"tracking.uri=http://127.0.0.1:{free_port()}",
        "runner.limit=5",
        "recipe.chunk_size=32,64",
        root=root,
    )
    assert done.returncode == 0, done.stderr
    assert "parent run of sweep" in done.stdout + done.stderr
    jobs = sorted(root.glob("multiruns/*/*/*/tracking.json"))
    records = [record_of(p.parent) for p in jobs]
    assert len(records) == 2 and not any(r.synced for r in records)
    assert sorted(r.params["recipe.chunk_size"] for r in records) == ["32", "64"]
    (sweep,) = root.glob("multiruns/*/*/tracking.json")
    assert not record_of(sweep.parent).synced and record_of(sweep.parent).kind == "sweep"


@pytest.mark.slow  # a sweep of two jobs
def test_a_sweep_whose_parent_was_not_created_is_replayed_with_its_jobs(
    cli: InProcessCli, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "outputs"
    done = cli(
        "-m",
        f"tracking.uri=http://127.0.0.1:{free_port()}",
        "runner.limit=3",
        "recipe.chunk_size=32,64",
        root=root,
    )
    assert done.returncode == 0, done.stderr
    uri = f"sqlite:///{tmp_path / 'later' / 'mlflow.db'}"
    synced = heta_eval_sync(capsys, "--root", str(root), "--uri", uri)
    assert synced.returncode == 0, synced.stdout
    assert "synced 3 run(s), 0 failed, 0 waiting" in synced.stdout
    runs = all_runs(uri)
    (parent,) = [r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 2 and parent.info.status == "FINISHED"
