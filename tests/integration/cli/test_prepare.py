"""`heta-eval-prepare`: what every benchmark downloads, and local data verified in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...conftest import SHARED, InProcessCli


def test_prepare_lists_resources_and_verifies_local_data(
    cli: InProcessCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HETA_EVAL_CACHE", str(tmp_path / "cache"))

    def prepare(*args: str):  # type: ignore[no-untyped-def]
        return cli(*args, program="heta-eval-prepare")

    listing = prepare("--list")
    assert listing.returncode == 0, listing.stderr
    assert (
        "beir: scifact.zip" in listing.stdout
        and "uda: bench_fin_qa.json (sha256 8e0236" in listing.stdout
    )
    scifact = SHARED / "datasets" / "beir" / "scifact"
    local = prepare("benchmark=beir", f"benchmark.data_root={scifact}")
    assert local.returncode == 0, local.stderr
    assert f"qrels: {scifact / 'qrels' / 'test.tsv'}" in local.stdout
    offline = prepare("benchmark=beir", "runner.offline=true")
    assert offline.returncode == 1
    assert "offline" in offline.stderr and "benchmark.data_root" in offline.stderr
    assert not (tmp_path / "cache" / "beir" / "scifact.zip").exists()
