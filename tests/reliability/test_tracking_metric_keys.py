"""Tracking never gets stuck on a name (issue 17, item 7): slice labels of any length or
spelling give valid metric keys, unique per label; an item MLflow refuses never stops the
rest of a run's logging, and `heta-eval-sync` finishes an entry that holds one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from heta_eval.tracking.outbox import Outbox
from mlflow import MlflowClient

from heta_eval.tracking.lenient import REJECTED_TAG
from heta_eval.tracking.mlflow_tracker import MlflowTracker
from heta_eval.tracking.naming import MAX_KEY, key_problem

from ..conftest import CliRunner
from .conftest import jsonl_args, mlflow_runs, read_report, report_path, write_jsonl
from .processes import cli_env

LONG = "why " * 75  # a 300-character label


@pytest.mark.slow
def test_long_and_colliding_slice_labels_are_all_tracked(
    run_cli: CliRunner, tmp_path: Path
) -> None:
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
    proc = run_cli(*jsonl_args(docs, cases, "benchmark.slice_by=[qt]"))
    assert proc.returncode == 0, proc.stderr
    assert "MLflow unreachable" not in proc.stdout + proc.stderr
    assert not (tmp_path / "outputs" / "tracking_outbox").exists()
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
    tracker.start(run_name="r", config=config, tags={"heta_eval.test": "1"})
    tracker.end()
    assert not (tmp_path / "tracking_outbox").exists()
    (run,) = mlflow_runs(tmp_path)
    assert run.info.status == "FINISHED"
    assert run.data.params["recipe.metadata.fine"] == "3"
    # A character MLflow refuses in a key is escaped (`?` is `:3F`): the setting is logged.
    assert "recipe.metadata.odd?key" not in run.data.params
    assert run.data.params["recipe.metadata.odd:3Fkey"] == "1"
    # A key longer than MLflow's 250 characters is left out, and named.
    assert "longer than 250 characters" in run.data.tags[REJECTED_TAG]
    assert run.data.tags[REJECTED_TAG].startswith("1 item(s): 'recipe.metadata.xxx")


def test_sync_finishes_an_entry_holding_an_invalid_metric(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    outbox = Outbox(tmp_path)
    entry = outbox.new_entry(
        uri=uri,
        experiment="heta_eval",
        run_name="kept-in-the-outbox",
        params={"recipe.name": "bm25", "recipe.metadata.a?b": "1"},
        metrics=[
            ("bm25.ndcg_at_10", 0.5, 1, 0),
            ("slice/qt/" + "w" * 300 + "/bm25.ndcg_at_10", 0.25, 1, 0),
            ("cases.failed", 0.0, 1, 0),
        ],
    )
    outbox.save(entry.model_copy(update={"status": "FINISHED"}))
    proc = subprocess.run(
        [sys.executable, "-m", "heta_eval.cli.sync", "--root", str(tmp_path)],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "synced 1 run(s), 0 failed" in proc.stdout
    assert "2 refused by MLflow" in proc.stdout
    (run,) = MlflowClient(tracking_uri=uri).search_runs(["0", "1"])
    assert run.info.status == "FINISHED"
    assert run.data.metrics == {"bm25.ndcg_at_10": 0.5, "cases.failed": 0.0}
    assert run.data.params == {"recipe.name": "bm25"}
    assert "longer than 250 characters" in run.data.tags[REJECTED_TAG]
    assert next(outbox.entries()).synced
