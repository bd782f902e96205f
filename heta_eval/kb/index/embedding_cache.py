"""The embedding cache: document embeddings on disk, keyed by encoder and texts."""

from __future__ import annotations

import hashlib
import io
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from heta_eval.json_cache import (
    cache_directory,
    cache_reads,
    cache_writes,
    material_key,
    read_verified,
    write_verified,
)

log = logging.getLogger(__name__)


class EmbeddingCache:
    """Document embeddings on disk: one `.npy` per (encoder identity, ordered text hashes).

    A build over the same texts with the same encoder loads the matrix instead of encoding
    again (a sweep over chunk-independent settings, or a changed BM25 half of a hybrid
    recipe, never re-encodes). Writes are atomic; a file that is unreadable or does not match
    the digest kept beside it (`KEY.npy.sha256`) is a miss. During a run, it lives under the
    run's cache root unless given a directory, and follows `runner.cache`.
    """

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self._setting = directory

    @property
    def directory(self) -> Path:
        """Where the matrices are now (the run's cache root during a run; created on use)."""
        return cache_directory(self._setting, "embeddings")

    @staticmethod
    def key(identity: Mapping[str, Any], texts: Sequence[str]) -> str:
        hashes = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        return material_key({"encoder": dict(identity), "texts": hashes})

    def get(self, key: str, rows: int) -> np.ndarray | None:
        if not cache_reads():
            return None
        try:
            data = read_verified(self.directory / f"{key}.npy")
            if data is None:
                return None
            matrix = np.load(io.BytesIO(data), allow_pickle=False)
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable embedding cache entry %s (%s)", key, exc)
            return None
        if matrix.ndim != 2 or matrix.shape[0] != rows:
            log.warning("ignoring embedding cache entry %s of shape %s", key, matrix.shape)
            return None
        return matrix.astype(np.float32, copy=False)

    def put(self, key: str, matrix: np.ndarray) -> None:
        if not cache_writes():
            return
        try:
            path = self.directory / f"{key}.npy"
        except OSError as exc:
            log.warning("embedding cache unavailable (%s); not caching", exc)
            return
        buffer = io.BytesIO()
        np.save(buffer, matrix, allow_pickle=False)
        write_verified(path, buffer.getvalue())
