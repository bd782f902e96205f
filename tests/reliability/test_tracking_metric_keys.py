"""Tracking never gets stuck on a name (issue 17, item 7): slice labels of any length or
spelling give valid metric keys, unique per label; an item MLflow refuses never stops the
rest of a run's logging, and `heta-eval-sync` finishes a run directory whose record holds
one. `heta-eval` and `heta-eval-sync` run in this process."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval.tracking.lenient import REJECTED_TAG
from heta_eval.tracking.mlflow_tracker import MlflowTracker
from heta_eval.tracking.naming import MAX_KEY, key_problem, run_params
from heta_eval.tracking.run_record import write_record

from ..conftest import InProcessCli
from ..tracking_readback import all_runs, heta_eval_sync, record_of
from .conftest import jsonl_args, mlflow_runs, read_report, report_path, write_jsonl
from .processes import free_port

LONG = "why " * 75  # a 300-character label


def test_long_and_colliding_slice_labels_are_all_tracked(cli: InProcessCli, tmp_path: Path) -> None:
    topics = ["kelp", "comet", "glacier", "violin", "copper"]
    labels = [LONG, "a!b", "a?b", "..", "a/b"]
    docs = write_jsonl(
        tmp_path / "docs.jsonl",
        [{"document_id": t, "text": f"The {t} is described here."} for t in topics],
    )
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {
                "case_id": f"q{i}",
                "query": f"the {t}" if i % 2 == 0 else "nothing relevant",
                "evidence": [{"locator": {"document_id": t}}],
                "metadata": {"qt": label},
            }
            for i, (t, label) in enumerate(zip(topics, labels, strict=True))
        ],
    )
    proc = cli(*jsonl_args(docs, cases, "benchmark.slice_by=[qt]"))
    assert proc.returncode == 0, proc.stderr
    assert "NOT IN MLFLOW" not in proc.stdout
    assert record_of(report_path(proc.stdout).parent).synced
    report = read_report(report_path(proc.stdout))
    (run,) = mlflow_runs(tmp_path / "outputs")
    assert run.info.status == "FINISHED"
    assert REJECTED_TAG not in run.data.tags
    slices = {k: v for k, v in run.data.metrics.items() if k.startswith("slice/")}
    assert all(len(k) <= MAX_KEY and key_problem(k) is None for k in run.data.metrics)
    # One key per label and metric: nothing merged, nothing lost.
    expected = {
        (label, metric): mean
        for key, summary in report.score_slices.items()
        for label in [key.partition("=")[2]]
        for metric, mean in summary.items()
    }
    assert len(slices) == len(expected) == len(labels) * len(report.score_summary)
    recall = {k: v for k, v in slices.items() if k.endswith("bm25.evidence_recall_at_1")}
    assert sorted(recall.values()) == sorted(
        v for (_, m), v in expected.items() if m == "bm25.evidence_recall@1"
    )
    assert "slice/qt/a!b" not in "".join(slices) and len(recall) == 5


def test_a_param_key_mlflow_refuses_leaves_the_rest_logged(tmp_path: Path) -> None:
    tracker = MlflowTracker(root=tmp_path)
    config = {"recipe": {"metadata": {"odd?key": 1, "x" * 300: 2, "fine": 3}}}
    tracker.start(run_name="r", config=config, tags={"heta_eval.test": "1"}, run_dir=tmp_path)
    tracker.end()
    assert not tracker.offline
    (run,) = mlflow_runs(tmp_path)
    assert run.info.status == "FINISHED"
    assert run.data.params["recipe.metadata.fine"] == "3"
    # A character MLflow refuses in a key is escaped (`?` is `:3F`): the setting is logged.
    assert "recipe.metadata.odd?key" not in run.data.params
    assert run.data.params["recipe.metadata.odd:3Fkey"] == "1"
    # A key longer than MLflow's 250 characters is left out, and named.
    assert "longer than 250 characters" in run.data.tags[REJECTED_TAG]
    assert run.data.tags[REJECTED_TAG].startswith("1 item(s): 'recipe.metadata.xxx")


def test_sync_finishes_a_run_directory_holding_a_param_mlflow_refuses(
    cli: InProcessCli, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "outputs"
    done = cli(f"tracking.uri=http://127.0.0.1:{free_port()}", "runner.limit=3")
    assert done.returncode == 0 and "NOT IN MLFLOW" in done.stdout, done.stderr
    run_dir = report_path(done.stdout).parent
    record = record_of(run_dir)
    # A record written by another version, or edited: a key longer than MLflow takes.
    params = {**record.params, "recipe.metadata." + "w" * 300: "1"}
    write_record(run_dir, record.model_copy(update={"params": params}))
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    synced = heta_eval_sync(capsys, "--root", str(root), "--uri", uri)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "synced 1 run(s), 0 failed" in synced.stdout
    assert "1 refused by MLflow" in synced.stdout and "longer than 250" in synced.stdout
    (run,) = all_runs(uri)
    assert run.info.status == "FINISHED"
    assert run.data.params == record.params | run_params(read_report(run_dir / "report.json"))
    assert run.data.metrics["cases.evaluated"] == 3
