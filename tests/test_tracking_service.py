"""The tracking service (heta_eval/run/tracking_service.py, run/service_link.py): real
`heta-eval` runs with `tracking.service=true` start it, hand it their MLflow tracking and
leave it running for the next run; it exits when idle; a killed service, a stale socket, a
service of another key or a directory that is not private never lose a run's tracking."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from heta_eval.run.tracking_service import HOLD_ENV, MODULE, REPLAYED_TAG, SOCKET, SPOOL
from mlflow import MlflowClient
from mlflow.entities import Run

from heta_eval.records import EvaluationReport
from heta_eval.run import service_link
from heta_eval.tracking.mlflow_tracker import (
    HTTP_SETTINGS,
    TOP_DOCUMENTS,
    MlflowTracker,
    report_for_logging,
    report_metrics,
)

from .reliability.processes import (
    SLOW_INDEX,
    Finished,
    after_tracking,
    proc_entries,
    run_cli,
    start_cli,
)

SERVICE = ("tracking.service=true",)
pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds services in /proc")


def service_pids(base: Path) -> set[int]:
    """The tracking service processes serving directories under `base` (from /proc)."""
    return {
        proc.pid
        for proc in proc_entries()
        if proc.state != "Z"
        and MODULE.encode() in proc.argv
        and any(arg.startswith(os.fsencode(base)) for arg in proc.argv)
    }


def wait_for(condition: Callable[[], object], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def base() -> Iterator[Path]:
    """A private service directory short enough for a Unix socket path; the services the
    test started are killed at its end."""
    path = Path(tempfile.mkdtemp(prefix="hsvc-", dir="/tmp"))
    try:
        yield path
    finally:
        for pid in service_pids(path):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(path, ignore_errors=True)


def cli(root: Path, cwd: Path, base: Path, *args: str, **env: str) -> Finished:
    done = run_cli(root, cwd, "runner.progress=off", *args, HETA_EVAL_SERVICE_DIR=str(base), **env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def tracking_run(root: Path, report: Path, logged: bool = True) -> Run:
    """The MLflow run of the report at `report` (its `tracking.run_id`); with `logged`, once
    the service has logged and ended it (a run hands its logging over and exits first)."""
    run_id = json.loads(report.read_text())["run"]["tracking"]["run_id"]
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    if logged:
        wait_for(lambda: client.get_run(run_id).info.status != "RUNNING", timeout=60)
    return client.get_run(run_id)


def spooled(base: Path) -> list[Path]:
    """The hand-offs the services under `base` acknowledged and have not logged yet."""
    return sorted(base.glob(f"*/{SPOOL}/*.json"))


def artifact_bytes(root: Path, run_id: str, name: str) -> bytes:
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    with tempfile.TemporaryDirectory() as out:
        return Path(client.download_artifacts(run_id, name, out)).read_bytes()


def comparable(run: Run) -> tuple[dict[str, str], set[str]]:
    """A run's params (the service options aside) and metric names."""
    params = {k: v for k, v in run.data.params.items() if not k.startswith("tracking.service")}
    return params, set(run.data.metrics)


@pytest.mark.slow
def test_a_run_through_the_service_logs_what_a_worker_run_logs_and_the_next_run_reuses_it(
    tmp_path: Path, base: Path
) -> None:
    root = tmp_path / "outputs"
    secret = "sk-service-secret-7f3a"
    # The same configuration tracked by its own worker, then twice through the service.
    worker = cli(root, tmp_path, base, "runner.resume=false", f"+recipe.metadata.api_key={secret}")
    assert service_pids(base) == set()
    first = cli(
        root, tmp_path, base, "runner.resume=false", f"+recipe.metadata.api_key={secret}", *SERVICE
    )
    (pid,) = service_pids(base)
    # The second run imports no MLflow in its process (-X importtime's list).
    second = cli(
        root,
        tmp_path,
        base,
        "runner.resume=false",
        f"+recipe.metadata.api_key={secret}",
        *SERVICE,
        PYTHONPROFILEIMPORTTIME="1",
    )
    assert service_pids(base) == {pid}, "the second run did not reuse the running service"
    imported = [line for line in second.stderr.splitlines() if line.startswith("import time:")]
    assert imported, second.stderr[-2000:]
    modules = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in imported}
    assert "heta_eval" in modules and not modules & {"mlflow", "sqlalchemy", "alembic"}

    reference = tracking_run(root, worker.report_path)
    for done in (first, second):
        run = tracking_run(root, done.report_path)
        assert run.info.status == "FINISHED"
        assert run.data.params["tracking.service"] == "true"
        assert comparable(run) == comparable(reference)
        # Scores are the same; latencies and build times are this run's own.
        for name, value in reference.data.metrics.items():
            if "latency" not in name and "seconds" not in name and not name.startswith("cache."):
                assert run.data.metrics[name] == value, name
        # The report artifact is the run's report.json, byte for byte.
        logged = artifact_bytes(root, run.info.run_id, "report.json")
        assert logged == done.report_path.read_bytes()
        names = {
            a.path
            for a in MlflowClient(f"sqlite:///{root / 'mlflow.db'}").list_artifacts(run.info.run_id)
        }
        ref_names = {
            a.path
            for a in MlflowClient(f"sqlite:///{root / 'mlflow.db'}").list_artifacts(
                reference.info.run_id
            )
        }
        assert names == ref_names
    # The secret is masked in what the service logged, and its own log does not hold it.
    for done in (first, second):
        run = tracking_run(root, done.report_path)
        assert run.data.params["recipe.metadata.api_key"] == "***"
        assert secret not in json.dumps([run.data.params, run.data.tags])
        assert secret not in done.stdout + done.stderr
    # The service's directory and socket are this user's alone.
    (directory,) = [p for p in base.iterdir() if p.is_dir()]
    assert secret not in (directory / "service.log").read_text()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / SOCKET).stat().st_mode) == 0o600


@pytest.mark.slow
def test_the_service_exits_when_idle_and_removes_its_socket(tmp_path: Path, base: Path) -> None:
    root = tmp_path / "outputs"
    cli(root, tmp_path, base, *SERVICE, "tracking.service_idle_seconds=1")
    (pid,) = service_pids(base)
    (directory,) = [p for p in base.iterdir() if p.is_dir()]
    assert wait_for(lambda: pid not in service_pids(base), timeout=30)
    assert not (directory / SOCKET).exists()
    assert "exits (idle" in (directory / "service.log").read_text()


@pytest.mark.slow
def test_a_killed_service_leaves_a_stale_socket_and_the_next_run_starts_a_new_one(
    tmp_path: Path, base: Path
) -> None:
    root = tmp_path / "outputs"
    cli(root, tmp_path, base, *SERVICE)
    (pid,) = service_pids(base)
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not service_pids(base))
    (directory,) = [p for p in base.iterdir() if p.is_dir()]
    assert (directory / SOCKET).exists()  # stale: nobody listens
    done = cli(root, tmp_path, base, *SERVICE, "runner.resume=false")
    (new,) = service_pids(base)
    assert new != pid
    assert "not reached" not in done.stdout + done.stderr  # a new service, not the fallback
    run = tracking_run(root, done.report_path)
    assert run.info.status == "FINISHED" and "ndcg_at_10" in run.data.metrics


@pytest.mark.slow
def test_a_service_killed_mid_run_fails_over_and_the_run_is_complete(
    tmp_path: Path, base: Path
) -> None:
    root = tmp_path / "outputs"
    args = (
        "runner.progress=off",
        "benchmark=sample_units",
        SLOW_INDEX,
        "+recipe.indexes.bm25.seconds=0.05",
        "runner.max_concurrent_queries=1",
        after_tracking(root),
        *SERVICE,
    )
    run = start_cli(root, tmp_path, *args, HETA_EVAL_SERVICE_DIR=str(base))
    # The tracking run exists (the service saved it): the evaluation is under way.
    assert wait_for(lambda: list((root / "state").glob("*/tracking.json")), timeout=120)
    (pid,) = service_pids(base)
    os.kill(pid, signal.SIGKILL)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-3000:]
    assert "tracking goes on in this process" in out + err and "tracking service" in out + err
    report = Path(next(x for x in out.splitlines() if x.startswith("report: ")).split(": ", 1)[1])
    tracked = tracking_run(root, report)
    assert tracked.info.status == "FINISHED" and "bm25.ndcg_at_10" in tracked.data.metrics
    logged = artifact_bytes(root, tracked.info.run_id, "report.json")
    assert logged == report.read_bytes()


@pytest.mark.slow
def test_two_runs_at_once_hand_their_tracking_to_one_service(tmp_path: Path, base: Path) -> None:
    root = tmp_path / "outputs"
    results = {}

    def one(top_k: int) -> None:
        results[top_k] = run_cli(
            root,
            tmp_path,
            "runner.progress=off",
            f"runner.top_k={top_k}",
            *SERVICE,
            HETA_EVAL_SERVICE_DIR=str(base),
        )

    threads = [threading.Thread(target=one, args=(k,)) for k in (5, 10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(service_pids(base)) == 1  # the second run waited for the first one's start
    for top_k, done in results.items():
        assert done.returncode == 0, done.stderr[-3000:]
        assert "not reached" not in done.stdout + done.stderr
        run = tracking_run(root, done.report_path)
        assert run.info.status == "FINISHED"
        assert run.data.params["eval.top_k"] == str(top_k)


@pytest.mark.slow
def test_a_sweep_keeps_its_own_tracker_worker(tmp_path: Path, base: Path) -> None:
    root = tmp_path / "outputs"
    done = cli(root, tmp_path, base, "-m", "runner.top_k=5,10", *SERVICE)
    assert service_pids(base) == set() and not any(base.iterdir())
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    runs = client.search_runs(["1"])
    assert sum(r.info.status == "FINISHED" for r in runs) == 3, done.stderr[-2000:]


@pytest.mark.slow
def test_a_directory_others_may_enter_is_refused_and_the_run_tracks_in_its_own_worker(
    tmp_path: Path, base: Path
) -> None:
    shared = base / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    root = tmp_path / "outputs"
    done = cli(root, tmp_path, shared, *SERVICE)
    assert "MLflow tracking service not reached" in done.stdout + done.stderr
    assert "not a private directory" in done.stdout + done.stderr
    assert service_pids(base) == set()
    run = tracking_run(root, done.report_path)
    assert run.info.status == "FINISHED" and "bm25.ndcg_at_10" in run.data.metrics


@pytest.mark.slow
def test_a_service_of_another_key_is_not_used(tmp_path: Path, base: Path) -> None:
    root = tmp_path / "outputs"
    env = {"HETA_EVAL_SERVICE_DIR": str(base)}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        for name in [n for n in os.environ if n.startswith("MLFLOW_")]:
            patch.delenv(name)
        for name in HTTP_SETTINGS.values():
            patch.setenv(name, "")  # restored at the end; the tracker sets them as a run's does
        tracker = MlflowTracker(root=root)
        directory = service_link.service_dir(tracker.uri)
    # A service answering in this key's directory for another key (an older code's).
    (directory / "key").write_text("another-key\n")
    other = subprocess.Popen(
        [sys.executable, "-m", MODULE, str(directory), "60"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert wait_for(lambda: (directory / SOCKET).exists())
        done = cli(root, tmp_path, base, *SERVICE)
        assert "is not for this key" in done.stdout + done.stderr, done.stderr[-2000:]
        run = tracking_run(root, done.report_path)
        assert run.info.status == "FINISHED" and "bm25.ndcg_at_10" in run.data.metrics
    finally:
        other.kill()
        other.wait()


def test_the_key_follows_the_store_and_mlflow_settings_without_holding_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
    first = service_link.service_key("sqlite:////tmp/a/mlflow.db")
    assert first == service_link.service_key("sqlite:////tmp/a/mlflow.db")
    assert first != service_link.service_key("sqlite:////tmp/b/mlflow.db")
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "s3cret-token-value")
    with_token = service_link.service_key("sqlite:////tmp/a/mlflow.db")
    assert with_token != first and "s3cret" not in with_token


@pytest.mark.slow
def test_a_run_hands_its_logging_to_the_service_and_exits_before_it_is_done(
    tmp_path: Path, base: Path
) -> None:
    root = tmp_path / "outputs"
    # The service this run starts waits 3 s between taking the hand-off and logging it.
    done = cli(root, tmp_path, base, *SERVICE, **{HOLD_ENV: "3"})
    (pending,) = spooled(base)
    assert "MLflow logging: handed to the tracking service" in done.stdout
    assert str(pending) in done.stdout
    assert stat.S_IMODE(pending.stat().st_mode) == 0o600
    entry = json.loads(pending.read_text())
    assert entry["call"]["artifacts"]["report"] == str(done.report_path)
    # The spool holds the report as the tracker logs it, which the service logs from (it
    # never reads report.json back, only logs it as a file).
    assert "report_path" not in entry["call"]
    whole = EvaluationReport.read_json(done.report_path)
    assert max(len(r.retrieved) for r in whole.case_results) > TOP_DOCUMENTS
    handed = EvaluationReport.model_validate_json(entry["call"]["report"])
    assert handed == report_for_logging(whole) != whole
    # The run exited before its logging: the MLflow run is still running, with no metrics.
    early = tracking_run(root, done.report_path, logged=False)
    assert early.info.status == "RUNNING" and not early.data.metrics
    assert early.info.run_id == entry["run_id"]
    # The completion is recorded (the service has the hand-off on disk): a rerun reuses it.
    assert len(list((root / "state").glob("*/done.json"))) == 1
    assert wait_for(lambda: not spooled(base), timeout=60)
    run = tracking_run(root, done.report_path)
    assert run.info.status == "FINISHED" and "ndcg_at_10" in run.data.metrics
    assert REPLAYED_TAG not in run.data.tags
    assert artifact_bytes(root, run.info.run_id, "report.json") == done.report_path.read_bytes()
    # The same command again reuses the result, and hands that run's logging over too.
    again = cli(root, tmp_path, base, *SERVICE)
    assert "reused the result" in again.stdout
    assert "MLflow logging: handed to the tracking service" in again.stdout
    reused = tracking_run(root, again.report_path)
    assert reused.info.run_id != run.info.run_id
    assert reused.info.status == "FINISHED" and "ndcg_at_10" in reused.data.metrics
    assert reused.data.tags["heta_eval.reused_from.run_id"] == run.info.run_id
    assert not spooled(base)


@pytest.mark.slow
def test_a_hand_off_the_service_died_before_logging_is_replayed_by_the_next_service(
    tmp_path: Path, base: Path
) -> None:
    root = tmp_path / "outputs"
    done = cli(root, tmp_path, base, *SERVICE, **{HOLD_ENV: "600"})
    (pending,) = spooled(base)
    (pid,) = service_pids(base)
    os.kill(pid, signal.SIGKILL)  # after the hand-off was acknowledged, before any logging
    assert wait_for(lambda: not service_pids(base))
    assert tracking_run(root, done.report_path, logged=False).info.status == "RUNNING"
    assert spooled(base) == [pending]
    # The replay logs the report the spool holds: report.json is only logged as a file.
    whole = EvaluationReport.read_json(done.report_path)
    entry = json.loads(pending.read_text())
    assert EvaluationReport.model_validate_json(entry["call"]["report"]) == report_for_logging(
        whole
    )
    # The next run starts a new service (no hold), which replays the hand-off first.
    second = cli(root, tmp_path, base, *SERVICE, "runner.resume=false")
    said = second.stdout + second.stderr
    assert "is logging 1 run(s)" in said and pending.stem in said
    assert wait_for(lambda: not spooled(base), timeout=60)
    run = tracking_run(root, done.report_path)
    assert run.info.status == "FINISHED" and "ndcg_at_10" in run.data.metrics
    assert str(pending) in run.data.tags[REPLAYED_TAG]
    expected = {name: value for name, value, _ in report_metrics(whole)}
    assert {k: v for k, v in run.data.metrics.items() if k in expected} == pytest.approx(expected)
    assert artifact_bytes(root, run.info.run_id, "report.json") == done.report_path.read_bytes()
    (directory,) = [p for p in base.iterdir() if p.is_dir()]
    assert f"{pending.stem}: replayed" in (directory / "service.log").read_text()
    # The second run itself is logged as usual.
    later = tracking_run(root, second.report_path)
    assert later.info.status == "FINISHED" and REPLAYED_TAG not in later.data.tags


def runs_table(root: Path, cwd: Path, base: Path, *args: str) -> str:
    """`heta-eval-runs --root ROOT` (the services under `base`), its output."""
    proc = subprocess.run(
        [sys.executable, "-m", "heta_eval.cli.runs", "--root", str(root), *args],
        cwd=cwd,
        env={**os.environ, "HETA_EVAL_SERVICE_DIR": str(base), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.slow
def test_heta_eval_runs_shows_a_run_the_service_has_not_logged_yet_as_logging(
    tmp_path: Path, base: Path
) -> None:
    """MLflow says RUNNING until the service has logged a handed-off run; heta-eval-runs
    says LOGGING, with the spool file that holds it, and whether a service will log it."""
    import pandas as pd

    root = tmp_path / "outputs"
    done = cli(root, tmp_path, base, *SERVICE, **{HOLD_ENV: "600"})
    (pending,) = spooled(base)
    run_id = tracking_run(root, done.report_path, logged=False).info.run_id
    shown = runs_table(root, tmp_path, base)
    assert "RUNNING" not in shown and "│ LOGGING" in shown
    note = f"LOGGING: {run_id}: MLflow logging pending in {pending}, report {done.report_path}"
    assert f"{note} (the tracking service logs it)" in shown
    runs_table(root, tmp_path, base, "--output", str(tmp_path / "runs.csv"))
    (row,) = pd.read_csv(tmp_path / "runs.csv").to_dict("records")
    assert row["status"] == "LOGGING" and row["logging_spool"] == str(pending)
    # The service dies before logging it: the next service for this store will.
    (pid,) = service_pids(base)
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not service_pids(base))
    shown = runs_table(root, tmp_path, base)
    assert (
        f"{note} (its service has ended; the next run with tracking.service=true logs it)"
    ) in shown
    # Without the spool (another user's service directory), MLflow's word stands.
    assert "│ RUNNING" in runs_table(root, tmp_path, tmp_path / "elsewhere")


@pytest.mark.slow
def test_a_run_over_its_failure_rate_hands_its_failed_run_to_the_service(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure-rate error is raised once the service has the hand-off, which ends the
    MLflow run FAILED; the error says so (`handed_over`), and the run is not ended twice."""
    from heta_eval import evaluate
    from heta_eval.run.failures import FailureRateExceededError

    monkeypatch.setenv(service_link.DIR_ENV, str(base))
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the build cache's directory should be")
    root = tmp_path / "outputs"
    overrides = [
        f"paths.root={root}",
        *SERVICE,
        "runner.limit=4",
        "runner.progress=off",
        f"runner.cache_dir={blocker}/cache",
        "runner.max_failure_rate=0.5",
    ]
    with pytest.raises(FailureRateExceededError, match="4 of 4 case results failed") as raised:
        evaluate(overrides=overrides)
    assert raised.value.handed_over and raised.value.report is not None
    assert service_pids(base)
    run_id = raised.value.report.run.tracking.run_id
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    assert wait_for(lambda: not spooled(base), timeout=60)
    run = client.get_run(run_id)
    assert run.info.status == "FAILED"
    assert run.data.metrics["cases.failed"] == 4.0
