"""A value interpolated from an environment variable never becomes a name or a path (issue 23,
item 10): `benchmark.name=${oc.env:SOME_API_KEY}` would put the key on stdout, in the MLflow
run name, tags and params, the reports, the journal, the caches and a directory name.

The real CLI: refused before any work, the key named, the value nowhere.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from ..conftest import InProcessCli
from .conftest import jsonl_args, nothing_written, small_benchmark


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("benchmark.name=${oc.env:SOME_API_KEY}", "benchmark.name"),
        ("benchmark.split=pre-${oc.env:SOME_API_KEY}", "benchmark.split"),
        ("runner.cache_dir=${oc.env:SOME_API_KEY}", "runner.cache_dir"),
    ],
)
def test_a_name_or_path_from_the_environment_is_refused_before_any_work(
    cli: InProcessCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: str, key: str
) -> None:
    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv("SOME_API_KEY", secret)
    docs, cases = small_benchmark(tmp_path, cases=2)
    root = tmp_path / "outputs"
    done = cli(*jsonl_args(docs, cases), override)
    assert done.returncode != 0
    assert f"{key}: takes its value from the environment variable SOME_API_KEY" in done.stderr
    assert secret not in done.stdout + done.stderr
    assert nothing_written(root)
    assert not [p for p in tmp_path.rglob("*") if secret[:8] in p.name]


def test_what_counts_as_a_name_or_a_path() -> None:
    from heta_eval.config.env_names import env_names_and_paths

    cfg = OmegaConf.create(
        {
            "paths": {"root": "${oc.env:HOME}/outputs"},
            "benchmark": {"name": "${oc.env:X_NAME}", "metadata": {"note": "${oc.env:NOTE}"}},
            "recipe": {"answerer": {"api_key": "${oc.env:KEY}", "cache_dir": "${oc.env:DIR}"}},
            "tracking": {"experiment_name": "team-${oc.env:USER}"},
        }
    )
    found = env_names_and_paths(cfg)
    # An absolute path from the environment (HOME) is a place, not a secret; a name never.
    assert found == {
        "benchmark.name": "X_NAME",
        "recipe.answerer.cache_dir": "DIR",
        "tracking.experiment_name": "USER",
    }
