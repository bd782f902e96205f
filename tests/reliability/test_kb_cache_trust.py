"""Caches are verified, never trusted: a cached query response whose content changed and a
build cache entry whose checksum list is empty are misses, and the scores do not move."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heta_eval import EvaluationReport

from ..conftest import InProcessCli
from .conftest import report_path

ARGS = ("runner.limit=8", "tracking=none", "runner.max_concurrent_queries=1")


def _evaluate(cli: InProcessCli, *extra: str) -> EvaluationReport:
    done = cli(*ARGS, *extra)
    assert done.returncode == 0, done.stderr
    return EvaluationReport.read_json(report_path(done.stdout))


@pytest.mark.slow
def test_a_changed_cached_response_is_a_miss(cli: InProcessCli, tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    first = _evaluate(cli)
    assert first.run.cache["response_misses"] == 8
    # Swap the top two results of every cached response that has two: still valid JSON.
    changed = 0
    for path in sorted((root / "cache" / "responses").glob("*.json")):
        entry = json.loads(path.read_text())
        results = entry["response"]["results"]
        if len(results) >= 2:
            results[0], results[1] = results[1], results[0]
            path.write_text(json.dumps(entry))
            changed += 1
    assert changed
    again = _evaluate(cli, "runner.resume=false")
    assert again.run.cache["response_misses"] == changed
    assert again.run.cache["response_hits"] == 8 - changed
    assert again.score_summary == first.score_summary
    # A response whose digest is gone is a miss too, and is written again.
    (digest,) = list((root / "cache" / "responses").glob("*.json.sha256"))[:1]
    digest.unlink()
    third = _evaluate(cli, "runner.resume=false")
    assert third.run.cache["response_misses"] == 1 and digest.exists()
    assert third.score_summary == first.score_summary


@pytest.mark.slow
def test_a_build_cache_entry_with_an_empty_checksum_list_is_a_miss(
    cli: InProcessCli, tmp_path: Path
) -> None:
    root = tmp_path / "outputs"
    first = _evaluate(cli, "runner.cache=write")
    (entry,) = [p for p in (root / "cache" / "kb").glob("*/*") if p.is_dir()]
    (entry / "checksums.json").write_text("{}")
    # Chunks in reverse order: it loads, but every index position names another chunk.
    chunks = entry / "chunks.jsonl"
    chunks.write_text("".join(reversed(chunks.read_text().splitlines(keepends=True))))
    again = _evaluate(cli, "runner.resume=false", "runner.cache=read")
    cache = again.run.cache
    assert (cache["hits"], cache["discarded"]) == (0, 1), cache
    assert again.score_summary == first.score_summary
