"""A run's identity decides reuse: never a stale or foreign result, never a dropped one.

Each test is one way today's users got stale or missing results before the run lifecycle
had an identity (config, data and code digests); `heta-eval` in this process (a real
process where the code itself changes between runs), real files, the MLflow store read back
with MlflowClient.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval.protocols import (
    BenchmarkEvaluatorProtocol,
    BenchmarkProtocol,
    missing_members,
    protocol_members,
)

from ..conftest import REPO, InProcessCli
from .conftest import jsonl_args, read_report, report_path, small_benchmark, write_jsonl
from .processes import cli_env, run_cli

RECALL = "bm25.evidence_recall@1"
REUSED_TAG = "heta_eval.reused_from.run_id"


def _reused(proc: object) -> bool:
    return "already evaluated" in proc.stdout + proc.stderr  # type: ignore[attr-defined]


def _runs(uri: str) -> list:
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("heta_eval")
    return client.search_runs([experiment.experiment_id], order_by=["attributes.start_time ASC"])


@pytest.mark.slow
def test_edited_cases_are_evaluated_again_not_replayed(cli: InProcessCli, tmp_path: Path) -> None:
    docs, cases = small_benchmark(tmp_path, cases=8)
    args = (*jsonl_args(docs, cases), "tracking=none")
    root = tmp_path / "outputs"
    first = cli(*args, root=root)
    assert first.returncode == 0, first.stderr
    assert read_report(report_path(first.stdout)).score_summary[RECALL] == 1.0

    # Every evidence now points at another document: what BM25 finds is no longer evidence.
    rows = [json.loads(line) for line in cases.read_text().splitlines()]
    topics = [row["evidence"][0]["locator"]["document_id"] for row in rows]
    for row, topic in zip(rows, topics[1:] + topics[:1], strict=True):
        row["evidence"] = [{"locator": {"document_id": topic}}]
    write_jsonl(cases, rows)
    # Even without the completion marker, the old journal must not replay the old cases.
    for marker in (root / "state").rglob("done.json"):
        marker.unlink()
    again = cli(*args, root=root)
    assert again.returncode == 0, again.stderr
    assert not _reused(again)
    edited = read_report(report_path(again.stdout))
    assert edited.run.resumed_cases == 0
    fresh = cli(*args, root=tmp_path / "fresh")
    assert fresh.returncode == 0, fresh.stderr
    assert edited.score_summary == read_report(report_path(fresh.stdout)).score_summary
    assert edited.score_summary[RECALL] == 0.0
    assert edited.run.identity != read_report(report_path(first.stdout)).run.identity


@pytest.mark.slow
def test_two_configurations_sharing_a_run_directory_each_get_their_own_report(
    cli: InProcessCli, tmp_path: Path
) -> None:
    root, shared = tmp_path / "outputs", tmp_path / "shared-run-dir"
    common = ("tracking=none", f"hydra.run.dir={shared}", "runner.limit=6")
    one = cli(*common, "runner.top_k=1", root=root)
    other = cli(*common, root=root)  # overwrites shared/report.json
    assert one.returncode == 0 and other.returncode == 0, one.stderr + other.stderr
    assert read_report(shared / "report.json").run.top_k == 10
    again = cli(*common, "runner.top_k=1", root=root)
    assert again.returncode == 0, again.stderr
    assert _reused(again)
    report = read_report(shared / "report.json")
    assert report.run.top_k == 1  # this configuration's result, not the last writer's
    assert all(len(r.retrieved) <= 1 for r in report.case_results)


@pytest.mark.slow
def test_edited_code_is_never_served_a_cached_result(tmp_path: Path) -> None:
    # A checkout of heta_eval (package and conf/) that this test may edit, not in git. Its
    # bytecode comes along (tests/bytecode.py wrote it; copytree keeps the sources' times),
    # so each run does not compile the whole package again: Python checks each cached file
    # against its source's time and size, and the edit below changes both.
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "heta_eval", tree / "heta_eval")
    shutil.copytree(REPO / "conf", tree / "conf")
    env = cli_env(PYTHONPATH=f"{tree}:{REPO}")
    root = tmp_path / "outputs"

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "heta_eval", f"paths.root={root}", "runner.limit=6"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    where = subprocess.run(
        [sys.executable, "-c", "import heta_eval; print(heta_eval.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip() == str(tree / "heta_eval" / "__init__.py")
    first = run()
    assert first.returncode == 0, first.stderr
    assert _reused(run())
    # An uncommitted edit of an evaluator (a comment is enough to be different code).
    metric = tree / "heta_eval" / "evaluators" / "evidence.py"
    metric.write_text(metric.read_text() + "\n# edited\n")
    edited = run()
    assert edited.returncode == 0, edited.stderr
    assert not _reused(edited)
    report = read_report(report_path(edited.stdout))
    assert report.run.cache["hits"] == 0 and report.run.cache["response_hits"] == 0
    before = read_report(report_path(first.stdout)).run.identity
    assert report.run.identity is not None and before is not None
    assert report.run.identity.code != before.code
    assert report.run.identity.data == before.data


@pytest.mark.slow
def test_edited_user_component_is_evaluated_again(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    source = """
from heta_eval.protocols import Evaluator
from heta_eval.records import EvaluationScore


class Constant(Evaluator):
    name = "constant"

    async def evaluate(self, case, response):
        return EvaluationScore(name=self.name, value={value})
"""
    (plugin / "my_metric.py").write_text(source.format(value=1.0))
    args = ("tracking=none", "runner.limit=4", "evaluator.extra=[{_target_:my_metric.Constant}]")
    env = {"PYTHONPATH": f"{plugin}:{REPO}"}
    root = tmp_path / "outputs"
    first = run_cli(root, tmp_path, *args, **env)
    assert first.returncode == 0, first.stderr
    assert read_report(report_path(first.stdout)).score_summary["bm25.constant"] == 1.0
    (plugin / "my_metric.py").write_text(source.format(value=0.0))
    again = run_cli(root, tmp_path, *args, **env)
    assert again.returncode == 0, again.stderr
    assert not _reused(again)
    assert read_report(report_path(again.stdout)).score_summary["bm25.constant"] == 0.0


@pytest.mark.slow
def test_failures_of_the_environment_are_retried_and_gated_on_every_run(
    cli: InProcessCli, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the build cache's directory should be")
    root = tmp_path / "outputs"
    broken = ("tracking=none", "runner.limit=8", f"runner.cache_dir={blocker}/cache")
    first = cli(*broken, root=root)
    # Every case failed: a failed run whatever runner.max_failure_rate says, report kept.
    assert first.returncode == 1, first.stdout + first.stderr
    assert "8 of 8 case results failed (all of them" in first.stderr
    (kept,) = (root / "runs").rglob("report.json")
    failed = read_report(kept)
    assert len(failed.failed_cases) == 8
    assert {r.error.stage for r in failed.failed_cases} == {"build"}  # type: ignore[union-attr]

    # The same configuration with a failure threshold: the failures are not final, they are
    # evaluated again (and fail again), and the gate applies.
    gated = cli(*broken, "runner.max_failure_rate=0.5", root=root)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert not _reused(gated)
    assert "8 of 8 case results failed" in gated.stderr

    # The environment fixed (no build cache): the failed cases are evaluated, not replayed.
    fixed = cli(*broken, "runner.cache=off", root=root)
    assert fixed.returncode == 0, fixed.stderr
    assert not _reused(fixed)
    report = read_report(report_path(fixed.stdout))
    assert not report.failed_cases and report.run.retried_cases == 8
    assert report.run.identity == failed.run.identity  # the same result, now complete


@pytest.mark.slow
def test_a_reused_result_is_a_run_in_the_tracker_that_asked_for_it(
    cli: InProcessCli, tmp_path: Path
) -> None:
    root = tmp_path / "outputs"
    first = cli("runner.limit=5", root=root)
    assert first.returncode == 0, first.stderr
    other_uri = f"sqlite:///{tmp_path / 'other.db'}"
    again = cli("runner.limit=5", f"tracking.uri={other_uri}", root=root)
    assert again.returncode == 0, again.stderr
    assert _reused(again) and "(run None)" not in again.stdout
    (original,) = _runs(f"sqlite:///{root / 'mlflow.db'}")
    (reused,) = _runs(other_uri)
    assert f"(run {reused.info.run_id})" in again.stdout
    assert reused.info.status == "FINISHED"
    assert reused.data.tags[REUSED_TAG] == original.info.run_id
    assert f"evaluated by run {original.info.run_id}" in reused.data.tags["mlflow.note.content"]
    # The same scores; none of the original's costs (it built and cached nothing itself).
    costs = ("kb.build_seconds", "cache.", "run.reused")
    scores = {k: v for k, v in original.data.metrics.items() if not k.startswith(costs)}
    assert {k: v for k, v in reused.data.metrics.items() if k != "run.reused"} == scores
    assert reused.data.metrics["run.reused"] == 1.0 and original.data.metrics["run.reused"] == 0
    client = MlflowClient(tracking_uri=other_uri)
    names = {a.path for a in client.list_artifacts(reused.info.run_id)}
    assert {"report.json", "report.html", "config.resolved.yaml"} <= names
    report = read_report(report_path(again.stdout))
    assert report.run.reused_from is not None
    assert report.run.reused_from.tracking_run_id == original.info.run_id
    assert report.run.tracking.run_id == reused.info.run_id


@pytest.mark.slow
def test_sweeps_keep_every_job_when_results_are_reused(cli: InProcessCli, tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    single = cli("runner.limit=4", "runner.top_k=3", root=root)
    assert single.returncode == 0, single.stderr
    sweep = ("-m", "runner.limit=4", "runner.top_k=3,5")
    first = cli(*sweep, root=root)
    assert first.returncode == 0, first.stderr
    again = cli(*sweep, root=root)  # the whole sweep again: every job reused
    assert again.returncode == 0, again.stderr
    runs = _runs(f"sqlite:///{root / 'mlflow.db'}")
    parents = [r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep"]
    assert len(parents) == 2
    for parent in parents:
        children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
        assert len(children) == 2, [c.data.tags for c in children]
        assert {c.info.status for c in children} == {"FINISHED"}
        assert parent.data.metrics["sweep.jobs_finished"] == 2
        sweep_dir = Path(parent.data.tags["heta_eval.sweep_dir"])
        for job in ("0", "1"):
            assert (sweep_dir / job / "config.resolved.yaml").is_file()
            assert (sweep_dir / job / "report.json").is_file()
    first_parent, second_parent = sorted(parents, key=lambda r: r.info.start_time)
    second_children = [
        r for r in runs if r.data.tags.get("mlflow.parentRunId") == second_parent.info.run_id
    ]
    assert all(REUSED_TAG in c.data.tags for c in second_children)
    # The job equal to the earlier single run reused it, and is still a child of its sweep.
    first_children = [
        r for r in runs if r.data.tags.get("mlflow.parentRunId") == first_parent.info.run_id
    ]
    assert sum(REUSED_TAG in c.data.tags for c in first_children) == 1


def test_the_members_the_runner_relies_on_are_declared() -> None:
    import re

    from heta_eval.benchmarks import SampleBenchmark
    from heta_eval.kb import KnowledgeBase, KnowledgeRecipe
    from heta_eval.kb.replay.knowledge_base import ReplayKnowledgeBase
    from heta_eval.kb.sharded import ShardedKnowledgeBase
    from heta_eval.protocols import (
        BaseKnowledgeBase,
        BaseRecipe,
        BaseTracker,
        BenchmarkAdapter,
        Evaluator,
        KnowledgeBaseLike,
        RecipeLike,
        Tracker,
    )
    from heta_eval.tracking import NullTracker

    assert {"default_top_k", "slice_by", "allow_private_urls", "tuning_split"} <= (
        protocol_members(BenchmarkProtocol)
    )
    assert {"aclose", "k"} <= protocol_members(BenchmarkEvaluatorProtocol)
    assert {"check_contents", "content_digests"} <= protocol_members(RecipeLike)
    assert {"query_case", "query_many", "exact_in_batches", "aclose"} <= protocol_members(
        KnowledgeBaseLike
    )
    assert {"run_id", "uri", "experiment", "connect"} <= protocol_members(Tracker)
    assert BenchmarkAdapter.default_top_k == 10 and BenchmarkAdapter.slice_by == ()
    assert isinstance(SampleBenchmark(), BenchmarkProtocol)
    assert isinstance(NullTracker(), Tracker) and NullTracker().run_id is None
    assert issubclass(NullTracker, BaseTracker) and issubclass(KnowledgeRecipe, BaseRecipe)
    for kb in (KnowledgeBase, ShardedKnowledgeBase, ReplayKnowledgeBase):
        assert issubclass(kb, BaseKnowledgeBase)
    for metric in SampleBenchmark().evaluators():
        assert isinstance(metric, Evaluator | BenchmarkEvaluatorProtocol)

    class Incomplete:  # every method of an adapter, without the declared optional members
        manifest = SampleBenchmark().manifest
        resources = prepare = documents = cases = run_units = evaluators = print

    class Complete(Incomplete, BenchmarkAdapter):
        pass

    assert not isinstance(Incomplete(), BenchmarkProtocol)
    assert missing_members(Incomplete(), BenchmarkProtocol) == [
        "allow_private_urls",
        "default_top_k",
        "ignore_identical_ids",
        "slice_by",
        "tuning_split",
        "with_split",
    ]
    assert isinstance(Complete(), BenchmarkProtocol) and Complete().default_top_k == 10
    # Nothing reads a declared member around the contracts (no getattr probing).
    members = set().union(
        *map(
            protocol_members,
            (BenchmarkProtocol, BenchmarkEvaluatorProtocol, RecipeLike, KnowledgeBaseLike, Tracker),
        )
    )
    probe = re.compile(r"getattr\(\s*[\w.]+,\s*[\"']([a-z_]+)[\"']")
    for path in (REPO / "heta_eval").rglob("*.py"):
        probed = set(probe.findall(path.read_text())) & (members - {"name"})
        assert not probed, f"{path}: getattr probes {sorted(probed)}"
    source = "\n".join(p.read_text() for p in (REPO / "heta_eval").rglob("*.py"))
    for member in ("default_top_k", "slice_by", "aclose", "run_id"):
        assert f'getattr(benchmark, "{member}"' not in source
        assert f'getattr(evaluator, "{member}"' not in source
        assert f'getattr(tracker, "{member}"' not in source
    # Nor a tracker's private state: whether its backend failed is `offline`.
    assert 'getattr(tracker, "_' not in source
    from heta_eval.tracking.mlflow_tracker import MlflowTracker

    assert isinstance(MlflowTracker.offline, property) and MlflowTracker.offline.__doc__
    assert "report.metadata" not in source
    # The code identity digests exactly the package's modules.
    from heta_eval import code_identity

    assert code_identity.PACKAGE_ROOT == REPO / "heta_eval"
