"""An MLflow tracking server that is down at the start, or dies mid-run: the evaluation ends,
its report is on disk, its tracking data waits in the outbox, and `heta-eval-sync` uploads it
once the server is back, exactly once, into a run equal to the local report.

A real `mlflow server` (SQLite store, served artifacts) on 127.0.0.1, killed with SIGKILL and
restarted on the same port; real `heta-eval` and `heta-eval-sync` subprocesses.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from heta_eval.tracking.outbox import Outbox, OutboxEntry
from mlflow import MlflowClient

from heta_eval import EvaluationReport
from heta_eval.tracking.mlflow_tracker import CASE_TABLE, case_table, report_metrics
from heta_eval.tracking.naming import PRIMARY_MODE_TAG, logged_params, metric_name, run_params

from .processes import (
    SLOW_INDEX,
    Finished,
    MlflowServer,
    after_tracking,
    cli_env,
    free_port,
    mlflow_server,
    run_cli,
    start_cli,
)


@pytest.fixture(autouse=True)
def _quick_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's MlflowClient gives up on a dead server at once."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")


def _sync(root: Path, *args: str) -> Finished:
    proc = subprocess.run(
        [sys.executable, "-m", "heta_eval.cli.sync", "--root", str(root), *args],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return Finished(proc.returncode, proc.stdout, proc.stderr)


def _entries(root: Path) -> list[OutboxEntry]:
    return list(Outbox(root).entries())


def _runs(client: MlflowClient) -> list:
    experiment = client.get_experiment_by_name("heta_eval")
    return client.search_runs([experiment.experiment_id]) if experiment else []


def _assert_run_equals_report(client: MlflowClient, run_id: str, run_dir: Path, dl: Path) -> None:
    """Params, tags, every metric, the case table and report.json of the run = the local run."""
    report = EvaluationReport.read_json(run_dir / "report.json")
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    resolved = yaml.safe_load((run_dir / "config.resolved.yaml").read_text())
    assert run.data.params == logged_params(resolved)[0] | run_params(report)
    tags = run.data.tags
    assert tags[PRIMARY_MODE_TAG] == report.primary_query_mode
    assert tags["benchmark.name"] == report.benchmark.name
    assert tags["recipe.name"] == report.recipe_manifest["name"]
    assert len(tags["heta_eval.config_hash"]) == 16
    for key, value in report.score_summary.items():
        assert run.data.metrics[metric_name(key)] == pytest.approx(value)
    expected = {}
    for key, value, _step in report_metrics(report):
        expected[key] = value  # the last step's value is the run's latest
    assert run.data.metrics == pytest.approx(expected)
    for key in expected:  # each metric once: a repeated sync added nothing
        steps = [m.step for m in client.get_metric_history(run_id, key)]
        assert len(steps) == len(set(steps)), key
    table = json.loads(Path(client.download_artifacts(run_id, CASE_TABLE, str(dl))).read_text())
    columns = case_table(report)
    assert table["columns"] == list(columns)
    assert len(table["data"]) == len(report.case_results)
    assert [row[0] for row in table["data"]] == columns["case_id"]
    uploaded = Path(client.download_artifacts(run_id, "report.json", str(dl)))
    assert EvaluationReport.read_json(uploaded) == report
    config = Path(client.download_artifacts(run_id, "config.resolved.yaml", str(dl)))
    assert config.read_text() == (run_dir / "config.resolved.yaml").read_text()


def _offline_run(root: Path, tmp_path: Path, port: int) -> Finished:
    """A run against a server that is not there: it ends, its data waits in the outbox."""
    done = run_cli(root, tmp_path, f"tracking.uri=http://127.0.0.1:{port}", "runner.limit=10")
    assert done.returncode == 0, done.stderr
    assert "NOT UPLOADED" in done.stdout and f"heta-eval-sync --root {root}" in done.stdout
    assert EvaluationReport.read_json(done.report_path).case_results
    return done


@pytest.mark.slow
def test_server_down_at_start_keeps_everything_in_the_outbox(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    done = _offline_run(root, tmp_path, free_port())
    run_dir = done.report_path.parent
    report = EvaluationReport.read_json(done.report_path)
    (entry,) = _entries(root)
    assert entry.pending and entry.server_run_id is None and entry.status == "FINISHED"
    resolved = yaml.safe_load((run_dir / "config.resolved.yaml").read_text())
    assert entry.params == logged_params(resolved)[0] | run_params(report)
    assert entry.tags["benchmark.name"] == "sample" and entry.tags["recipe.name"] == "bm25"
    kept = {(k, v, s) for k, v, _, s in entry.metrics}
    assert kept == {(k, float(v), s) for k, v, s in report_metrics(report)}
    outbox = Outbox(root)
    assert json.loads(outbox.file(entry, entry.table).read_text()) == json.loads(
        json.dumps(case_table(report))
    )
    assert outbox.file(entry, "report.json").read_bytes() == done.report_path.read_bytes()
    assert sorted(entry.artifacts) == ["config.resolved.yaml", "report.html", "report.json"]
    # A rerun reuses the finished result; the reuse is a tracking run of its own (kept in
    # the outbox too, since this server is down as well), naming the run it comes from.
    again = run_cli(
        root, tmp_path, f"tracking.uri=http://127.0.0.1:{free_port()}", "runner.limit=10"
    )
    assert again.returncode == 0 and "already evaluated" in again.stdout + again.stderr
    (reused,) = [e for e in _entries(root) if e.entry_id != entry.entry_id]
    assert reused.tags["heta_eval.reused_from.run_id"] == entry.local_run_id
    assert reused.status == "FINISHED"
    # The same scores; none of the original run's costs (build times, cache counts).
    first = {k: v for k, v, _, _ in entry.metrics}
    second = {k: v for k, v, _, _ in reused.metrics}
    assert second["run.reused"] == 1 and first["run.reused"] == 0
    costs = ("cache.", "kb.build_seconds")
    assert not [k for k in second if k.startswith(costs)]
    assert {k: v for k, v in first.items() if not k.startswith((*costs, "run.reused"))} == {
        k: v for k, v in second.items() if k != "run.reused"
    }

    # Servers still down: the sync says so within seconds, keeps the entries, and fails.
    down = _sync(root)
    assert down.returncode == 1 and "NOT uploaded" in down.stdout
    assert "synced 0 run(s), 2 failed, 0 waiting" in down.stdout
    assert entry in _entries(root)


@pytest.mark.slow  # starts an MLflow server (~10-20 s)
def test_server_down_at_start_then_synced_once(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    port = free_port()
    done = _offline_run(root, tmp_path, port)
    run_dir = done.report_path.parent

    with mlflow_server(tmp_path / "server", port) as server:
        client = MlflowClient(tracking_uri=server.uri)
        synced = _sync(root)
        assert synced.returncode == 0, synced.stdout + synced.stderr
        assert "synced 1 run(s), 0 failed" in synced.stdout
        (run,) = _runs(client)
        _assert_run_equals_report(client, run.info.run_id, run_dir, tmp_path / "dl1")

        again = _sync(root)
        assert again.returncode == 0 and "synced 0 run(s)" in again.stdout

        # A sync killed after creating the run but before recording anything: the repeat
        # finds the run by its outbox tag and adds nothing twice.
        (entry,) = _entries(root)
        Outbox(root).save(
            entry.model_copy(update={"server_run_id": None, "done": [], "synced": False})
        )
        repeated = _sync(root)
        assert repeated.returncode == 0 and "synced 1 run(s)" in repeated.stdout
        (same,) = _runs(client)
        assert same.info.run_id == run.info.run_id
        _assert_run_equals_report(client, run.info.run_id, run_dir, tmp_path / "dl2")


@pytest.mark.slow  # starts an MLflow server twice
def test_server_killed_mid_run_then_synced_into_the_same_run(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    server = MlflowServer(tmp_path / "server", free_port())
    server.start()
    try:
        client = MlflowClient(tracking_uri=server.uri)
        victim = start_cli(
            root,
            tmp_path,
            f"tracking.uri={server.uri}",
            SLOW_INDEX,
            "+recipe.indexes.bm25.seconds=0.1",
            "runner.max_concurrent_queries=1",
            "runner.limit=30",
            after_tracking(root),
        )
        # Mid-run: the server has the run and its params, and queries have started (the
        # journal has results); 30 queries at 0.1 s leave seconds before the run ends.
        deadline = time.monotonic() + 180
        started = None
        while time.monotonic() < deadline and victim.poll() is None:
            journals = list((root / "state").glob("*/journal.jsonl"))
            if journals and journals[0].read_text().count("\n") >= 2:
                runs = _runs(client)
                if runs and runs[0].data.params:
                    started = runs[0]
                    break
            time.sleep(0.1)
        assert started is not None and victim.poll() is None, victim.communicate()
        server.kill()
        out, err = victim.communicate(timeout=300)
        assert victim.returncode == 0, err
        done = Finished(victim.returncode, out, err)
        assert "NOT UPLOADED" in out and "heta-eval-sync" in out
        assert "failed (MlflowException" in out + err  # the warning, with the reason
        (entry,) = _entries(root)
        assert entry.server_run_id == started.info.run_id and entry.status == "FINISHED"

        server.start()
        synced = _sync(root)
        assert synced.returncode == 0, synced.stdout + synced.stderr
        assert f"-> run {started.info.run_id}" in synced.stdout
        (run,) = _runs(client)  # the run made before the outage, not a second one
        _assert_run_equals_report(client, run.info.run_id, done.report_path.parent, tmp_path / "dl")
        assert "synced 0 run(s)" in _sync(root).stdout
    finally:
        server.kill()


@pytest.mark.slow
def test_a_sweep_goes_on_when_the_server_is_down(tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    done = run_cli(
        root,
        tmp_path,
        "-m",
        f"tracking.uri=http://127.0.0.1:{free_port()}",
        "runner.limit=5",
        "recipe.chunk_size=32,64",
    )
    assert done.returncode == 0, done.stderr
    assert "parent run of sweep" in done.stdout + done.stderr
    entries = _entries(root)
    assert len(entries) == 2 and all(e.pending for e in entries)
    assert sorted(e.params["recipe.chunk_size"] for e in entries) == ["32", "64"]
