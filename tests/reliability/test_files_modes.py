"""Files others can read: what a run writes through temporary files (build cache entries,
cached responses, embeddings, every report.json, MLflow's copies) gets the modes the user's
umask gives, as files written directly do; a umask of 077 keeps them private."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from heta_eval.kb.index.embedding_cache import EmbeddingCache

from ..conftest import InProcessCli


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mask", "file_mode", "dir_mode"), [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)]
)
def test_a_run_writes_with_the_modes_of_the_umask(
    cli: InProcessCli, tmp_path: Path, mask: int, file_mode: int, dir_mode: int
) -> None:
    root = tmp_path / "outputs"
    with umask(mask):  # this process's, inherited by its worker processes
        done = cli("runner.limit=3")
        cache = EmbeddingCache(tmp_path / "embeddings")
        cache.put("k" * 64, np.ones((2, 3), dtype=np.float32))
    assert done.returncode == 0, done.stderr
    (entry,) = [p for p in (root / "cache" / "kb").glob("*/*") if p.is_dir()]
    assert _mode(entry) == dir_mode
    assert {_mode(p) for p in entry.rglob("*") if p.is_file()} == {file_mode}
    responses = list((root / "cache" / "responses").iterdir())
    assert responses and {_mode(p) for p in responses} == {file_mode}
    reports = list(root.rglob("report.json"))
    # The run directory's, the state's copy, MLflow's artifact.
    assert len(reports) == 3 and {_mode(p) for p in reports} == {file_mode}, reports
    assert any("artifacts" in p.parts for p in reports)
    assert {_mode(p) for p in (root / "state").rglob("*") if p.is_file()} == {file_mode}
    # The benchmark's documents, written by the object store's background writer.
    raw = [p for p in root.rglob("*") if p.is_file() and "raw" in p.relative_to(root).parts]
    assert raw and {_mode(p) for p in raw} == {file_mode}, raw[:3]
    assert {_mode(p) for p in (tmp_path / "embeddings").iterdir()} == {file_mode}
    assert EmbeddingCache(tmp_path / "embeddings").get("k" * 64, 2) is not None
