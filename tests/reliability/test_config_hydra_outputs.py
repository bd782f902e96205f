"""What Hydra writes and logs before our code runs keeps no secret (issue 36, items 3 to 5).

- A secret with spaces in a long override list: YAML folded `override_dirname` in
  `.hydra/hydra.yaml` at a space, and the masking, which scanned the written text, missed the
  continuation line. Now Hydra's files are written from a masked copy of the config.
- A sweep printed Hydra's launcher line `#0 : ... password=...` in clear.
- `hydra.job.name=${oc.env:SOME_API_KEY}` named the log file after the key; a stemmer, a
  `_target_` or a query mode from the environment was echoed in the validation error. Now a
  name or a path from the environment is refused before Hydra creates anything, and an error
  shows `${oc.env:NAME}` where the value would be.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from ..conftest import InProcessCli


def _files_with(root: Path, needle: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_a_spaced_secret_in_a_long_override_list_is_in_no_hydra_file(
    cli: InProcessCli, tmp_path: Path
) -> None:
    words = [f"w{uuid.uuid4().hex[:10]}" for _ in range(6)]
    filler = [f"+recipe.metadata.note_{i}={'x' * 40}" for i in range(4)]
    done = cli(
        "tracking=none",
        "runner.dry_run=true",
        *filler,
        f"+recipe.metadata.password={' '.join(words)}",
    )
    assert done.returncode == 0, done.stderr
    root = tmp_path / "outputs"
    (hydra_yaml,) = root.glob("runs/*/*/.hydra/hydra.yaml")
    assert "+recipe.metadata.password=***" in hydra_yaml.read_text()
    for word in words:
        assert _files_with(root, word) == [], word
        assert word not in done.stdout + done.stderr


def test_a_sweeps_launcher_line_shows_no_secret(cli: InProcessCli, tmp_path: Path) -> None:
    short, token = "hunter", f"ghp_{uuid.uuid4().hex}"
    done = cli(
        "-m",
        "tracking=none",
        "runner.dry_run=true",
        "runner.seed=1,2",
        f"+recipe.metadata.password={short}",
        f"+recipe.metadata.note='token {token}'",
    )
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    launched = [line for line in said.splitlines() if "#0 : " in line]
    assert launched and "+recipe.metadata.password=***" in launched[0], said
    assert f"password={short}" not in said and token not in said
    assert _files_with(tmp_path / "outputs", token) == []


@pytest.mark.parametrize(
    "override",
    ["hydra.job.name=${oc.env:SOME_API_KEY}", "hydra.run.dir=out-${oc.env:SOME_API_KEY}"],
)
def test_hydras_own_name_or_path_from_the_environment_is_refused_before_hydra_uses_it(
    cli: InProcessCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: str
) -> None:
    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv("SOME_API_KEY", secret)
    done = cli("tracking=none", override)
    assert done.returncode == 2, done.stdout + done.stderr
    key = override.partition("=")[0]
    assert f"{key}: takes its value from the environment variable SOME_API_KEY" in done.stderr
    assert secret not in done.stdout + done.stderr
    assert not [p for p in tmp_path.rglob("*") if secret[:8] in p.name]


@pytest.mark.parametrize(
    ("override", "shown"),
    [
        (
            "recipe.indexes.bm25.stemmer=${oc.env:SOME_API_KEY}",
            "recipe.indexes.bm25.stemmer: '${oc.env:SOME_API_KEY}' is not accepted by "
            "heta_eval.kb.BM25Index: '${oc.env:SOME_API_KEY}' is not a stemmer language",
        ),
        (
            "recipe.indexes.bm25._target_=${oc.env:SOME_API_KEY}",
            "recipe.indexes.bm25._target_: takes its value from the environment variable "
            "SOME_API_KEY",
        ),
        (
            "recipe.query_modes=[${oc.env:SOME_API_KEY}]",
            "recipe.query_modes.0: takes its value from the environment variable SOME_API_KEY",
        ),
    ],
)
def test_a_value_from_the_environment_never_appears_in_an_error(
    cli: InProcessCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: str, shown: str
) -> None:
    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv("SOME_API_KEY", secret)
    done = cli("tracking=none", override)
    assert done.returncode == 2, done.stdout + done.stderr
    assert shown in done.stderr
    assert secret not in done.stdout + done.stderr
