"""`runner.dry_run=true`: the plan of a run, with nothing built, queried, written or tracked."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import heta_eval

from ...conftest import SHARED, InProcessCli

UDA = SHARED / "datasets" / "uda"


def _files(root: Path) -> dict[str, int]:
    """Every file under `root` (but Hydra's run directories) with its modification time."""
    return {
        str(p.relative_to(root)): p.stat().st_mtime_ns
        for p in root.rglob("*")
        if p.is_file() and "runs" not in p.relative_to(root).parts
    }


def _row(stdout: str, unit: str) -> list[str]:
    line = next(x for x in stdout.splitlines() if re.match(rf"^\W*{re.escape(unit)}(?!\w)", x))
    return [cell.strip() for cell in re.split(r"[│┃]", line) if cell.strip()]


def test_dry_run_of_the_sample_prints_the_plan_and_writes_nothing(
    cli: InProcessCli, tmp_path: Path
) -> None:
    proc = cli("runner.dry_run=true")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "dry run: nothing is built, queried, written or tracked" in out
    assert "benchmark: sample/1/test (build scope: corpus)" in out
    assert "evaluators: evidence_recall@1, evidence_recall@5, ndcg@10, context_has_answer@5" in out
    assert _row(out, "corpus") == ["corpus", "36", "48", "48", "to build"]
    assert "48 of 48 cases x 1 query mode(s) = 48 queries" in out
    assert "tracking: MlflowTracker at sqlite:///" in out
    root = tmp_path / "outputs"
    # Hydra's run directory only: no MLflow store, no raw documents, cache or run state.
    assert sorted(p.name for p in root.iterdir()) == ["runs"]
    (run_dir,) = (root / "runs").glob("*/*")
    assert not (run_dir / "report.json").exists()


def test_dry_run_of_many_units_counts_queries_after_limit_and_modes(cli: InProcessCli) -> None:
    proc = cli(
        "runner.dry_run=true", "benchmark=sample_units", "recipe=bm25_fusion", "runner.limit=20"
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    rows = [_row(out, unit) for unit in ("astronomy", "cooking", "computing_history")]
    rows.append(_row(out, "ocean_science"))
    assert sum(int(r[2]) for r in rows) == 20  # cases after runner.limit
    assert all(int(r[3]) == 3 * int(r[2]) for r in rows)  # bm25, bm25_exact and fusion
    assert all(r[4] == "to build" for r in rows) and sum(int(r[1]) for r in rows) == 36
    assert "4 knowledge base(s), 4 to build and 0 found in the build cache" in out
    assert "20 of 48 cases x 3 query mode(s) = 60 queries" in out
    assert "limit: 20 cases (seed 0)" in out


def test_dry_run_after_a_real_run_finds_the_cached_build_and_the_finished_run(
    cli: InProcessCli, tmp_path: Path
) -> None:
    root = tmp_path / "outputs"
    real = heta_eval.evaluate(
        overrides=[
            f"paths.root={root}",
            "benchmark=sample_units",
            "runner.progress=off",
            "tracking=none",
        ]
    )
    before = _files(root)
    assert {"store", "cache", "state"} <= {p.parts[0] for p in map(Path, before)}

    proc = cli("benchmark=sample_units", "runner.dry_run=true", "tracking=none")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert _row(out, "cooking")[4] == "found in cache"
    assert "4 knowledge base(s), 0 to build and 4 found in the build cache" in out
    assert f"already evaluated: a run reuses {real.run.output_dir}/report.json" in out
    assert _files(root) == before  # store, cache and state untouched

    changed = cli(
        "benchmark=sample_units", "runner.dry_run=true", "tracking=none", "recipe.chunk_size=32"
    )
    assert changed.returncode == 0, changed.stderr
    assert "4 knowledge base(s), 4 to build and 0 found in the build cache" in changed.stdout
    assert "already evaluated" not in changed.stdout


@pytest.mark.skipif(not (UDA / "qa").is_dir(), reason=f"UDA not found at {UDA}")
def test_dry_run_of_99_units_shows_a_compact_table_with_totals(
    cli: InProcessCli, tmp_path: Path
) -> None:
    proc = cli("runner.dry_run=true", "benchmark=uda", f"benchmark.data_root={UDA}")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    units = [x for x in out.splitlines() if re.match(r"^│ \w+_\d{4}\s", x)]
    assert len(units) == 10
    assert "… 89 more units" in out
    totals = _row(out, "99 unit(s)")
    assert totals[0] == "99 unit(s)" and totals[4] == "99 to build, 0 in cache"
    assert re.search(r"documents per unit: min \d+, median [\d.]+, max \d+", out)
    assert f"{totals[2]} of {totals[2]} cases x 1 query mode(s) = {totals[3]} queries" in out
    assert not (tmp_path / "outputs" / "store").exists()


def test_dry_run_without_local_data_lists_the_downloads_and_fetches_nothing(
    cli: InProcessCli,
) -> None:
    proc = cli("runner.dry_run=true", "benchmark=beir", "benchmark.dataset=scifact")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "data: not available locally (offline mode: resource 'scifact.zip'" in out
    assert "to download: scifact.zip from https://" in out
    cache = Path(os.environ["HETA_EVAL_CACHE"])
    assert not list(cache.rglob("scifact*"))
