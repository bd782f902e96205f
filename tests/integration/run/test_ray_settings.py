"""runner.executor=ray with a remote cluster: paths its nodes cannot share are refused, by
the settings check and by `heta-eval` (in this process) before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval import RunnerSettings
from heta_eval.run.settings import RayExecutorError, check_shared_paths

from ...conftest import InProcessCli


def test_a_remote_cluster_refuses_paths_its_nodes_cannot_share(
    cli: InProcessCli, tmp_path: Path
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

    proc = cli("runner.executor=ray", "runner.ray_address=ray://head.example:10001")
    assert proc.returncode == 2, proc.stderr
    store = tmp_path / "outputs" / "store"
    assert f"runner.store_dir={store} is on node-local storage" in proc.stderr
    assert not (tmp_path / "outputs" / "mlflow.db").exists()  # refused before any work
