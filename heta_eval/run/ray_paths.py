"""Where a Ray cluster runs (`runner.ray_address`) and which paths its nodes can share.

Used by the unit executor (`ray_units.py`) and by the shards (`shards.py`); imports no Ray.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from heta_eval.run.settings import RunnerSettings

# Directories that are private to one machine: a build cache or object store there cannot
# be shared by the nodes of a cluster.
NODE_LOCAL_PREFIXES = ("/tmp", "/var/tmp", "/dev/shm", "/run", "/var/run")
LOCAL_ADDRESSES = (None, "", "local")


class RayExecutorError(ValueError):
    """`runner.executor=ray` was configured in a way that cannot work."""


def is_remote(address: str | None) -> bool:
    """Whether `runner.ray_address` names a cluster beyond this process's private one."""
    return address not in LOCAL_ADDRESSES


def check_shared_paths(settings: RunnerSettings) -> None:
    """Refuse a remote cluster with a build cache or object store that its nodes cannot
    share: a relative path (each worker resolves it in its own directory) or a node-local
    one (/tmp, /dev/shm, ...)."""
    if settings.executor != "ray" or not is_remote(settings.ray_address):
        return
    checked = {"runner.store_dir": settings.store_dir}
    if settings.cache != "off":
        checked["runner.cache_dir"] = settings.cache_dir
    for key, path in checked.items():
        posix = PurePosixPath(Path(path).as_posix())
        if not posix.is_absolute():
            why = "is a relative path, which each Ray worker would resolve on its own node"
        elif any(posix.is_relative_to(p) for p in NODE_LOCAL_PREFIXES):
            why = "is on node-local storage"
        else:
            continue
        raise RayExecutorError(
            f"{key}={path} {why}; with runner.executor=ray on the cluster at "
            f"runner.ray_address={settings.ray_address}, every node reads and writes it, so it "
            f"must be an absolute path on storage all nodes share (e.g. an NFS mount: "
            f"{key}=/shared/heta_eval/{Path(path).name})"
        )
