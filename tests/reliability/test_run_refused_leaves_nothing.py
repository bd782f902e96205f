"""A run refused before any work leaves no directory behind (issue 36, item 15): a malformed
benchmark line or a missing file (found while the benchmark loads, under the run's lock)
left an empty `store/` and `state/locks/` under paths.root. The directories a run creates are
removed again when it fails with nothing in them but its lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import InProcessCli
from .conftest import jsonl_args, write_jsonl


@pytest.mark.parametrize("problem", ["malformed line", "missing file"])
def test_a_refused_benchmark_leaves_no_store_nor_state(
    cli: InProcessCli, tmp_path: Path, problem: str
) -> None:
    docs = write_jsonl(tmp_path / "docs.jsonl", [{"document_id": "a", "text": "alpha"}])
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"case_id": "q1", "query": "alpha"\n', encoding="utf-8")
    if problem == "missing file":
        docs = tmp_path / "gone.jsonl"
    done = cli("tracking=none", *jsonl_args(docs, cases))
    assert done.returncode == 1, done.stdout + done.stderr
    root = tmp_path / "outputs"
    assert not (root / "store").exists() and not (root / "state").exists()
    assert not root.exists(), sorted(root.rglob("*"))


def test_a_root_used_before_keeps_what_is_in_it(cli: InProcessCli, tmp_path: Path) -> None:
    done = cli("tracking=none", "runner.limit=1")
    assert done.returncode == 0, done.stderr
    root = tmp_path / "outputs"
    kept = {p for p in root.rglob("*") if "runs" not in p.parts}
    cases = write_jsonl(tmp_path / "cases.jsonl", ['{"case_id": "q1"'])
    docs = write_jsonl(tmp_path / "docs.jsonl", [{"document_id": "a", "text": "alpha"}])
    assert cli("tracking=none", *jsonl_args(docs, cases)).returncode == 1
    assert kept <= {p for p in root.rglob("*") if "runs" not in p.parts}
    assert list(root.glob("state/*/done.json")) and (root / "store").is_dir()
