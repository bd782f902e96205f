"""Every cache of a run lives under its cache root and obeys `runner.cache`.

Real `heta-eval` runs with an LLM answerer and an LLM judge served by a local
OpenAI-compatible server (tests/openai_server.py); the server counts what it was asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import InProcessCli
from ..openai_server import serve_chat
from .conftest import read_report, report_path

CASES = 3


def _args(base_url: str, *extra: str) -> tuple[str, ...]:
    return (
        "tracking=none",
        "recipe=bm25_llm",
        f"recipe.answerer.base_url={base_url}",
        "recipe.answerer.api_key_env=null",
        "evaluator=llm_judge",
        f"evaluator.extra.0.base_url={base_url}",
        "evaluator.extra.0.api_key_env=null",
        f"runner.limit={CASES}",
        "runner.resume=false",  # evaluate again: only the caches may spare a request
        *extra,
    )


def _entries(directory: Path) -> int:
    return len(list(directory.glob("*.json"))) if directory.is_dir() else 0


@pytest.mark.slow
def test_answers_and_verdicts_are_cached_under_the_run_root_and_obey_runner_cache(
    cli: InProcessCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "outputs"
    shared = tmp_path / "shared-cache"  # $HETA_EVAL_CACHE: downloads only
    monkeypatch.setenv("HETA_EVAL_CACHE", str(shared))
    with serve_chat() as server:
        first = cli(*_args(server.base_url))
        assert first.returncode == 0, first.stderr
        assert server.count == 2 * CASES  # an answer and a verdict per case
        assert _entries(root / "cache" / "answers") == CASES
        assert _entries(root / "cache" / "judge") == CASES
        assert not list(shared.rglob("*.json"))

        cached = cli(*_args(server.base_url))
        assert cached.returncode == 0, cached.stderr
        assert server.count == 2 * CASES  # all from the run's caches

        off = cli(*_args(server.base_url, "runner.cache=off"))
        assert off.returncode == 0, off.stderr
        assert server.count == 4 * CASES  # nothing served from a cache

        # Another cache root: none of the first root's answers or verdicts.
        other = tmp_path / "other-cache"
        moved = cli(*_args(server.base_url, f"runner.cache_dir={other}"))
        assert moved.returncode == 0, moved.stderr
        assert server.count == 6 * CASES
        assert _entries(other / "answers") == CASES and _entries(other / "judge") == CASES

        # read: served from the cache.
        read = cli(*_args(server.base_url, "runner.cache=read"))
        assert read.returncode == 0 and server.count == 6 * CASES, read.stderr
    report = read_report(report_path(off.stdout))
    assert report.score_details["bm25.llm_judge"].scored == CASES
    assert not list(shared.rglob("*.json"))
