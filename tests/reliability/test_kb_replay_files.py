"""A replay's files read as bounded data, and scores as trec_eval reads them (issue 36,
items 9 and 15).

- A run file with a 100,000-character tag took 26 s (the masking of every message it passed
  through backtracked) and an 80 MB docid ran for over 11 minutes: ids, docids and tags now
  have a bounded length, and a longer one is refused as `FILE:LINE`, before any work.
- A score `1_000` was read as 1000 (Python's `float`); trec_eval reads scores with C's `atof`,
  which stops at `_`: 1.0.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import heta_eval
from heta_eval.benchmarks.sample import SAMPLE_DATA
from heta_eval.config.resolve import ConfigError
from heta_eval.kb.replay.files import read_run, trec_score

CASES = [
    json.loads(line)["case_id"]
    for line in (SAMPLE_DATA / "cases.jsonl").read_text().split("\n")
    if line
]
DOCS = [
    json.loads(line)["document_id"]
    for line in (SAMPLE_DATA / "documents.jsonl").read_text().split("\n")
    if line
]


def _replay(tmp_path: Path, lines: list[str]) -> None:
    run = tmp_path / "run.trec"
    run.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    heta_eval.evaluate(
        overrides=[
            f"paths.root={tmp_path / 'outputs'}",
            "tracking=none",
            "recipe=replay",
            f"recipe.run={run}",
        ]
    )


@pytest.mark.parametrize(
    ("field", "length"), [("tag", 100_000), ("docid", 5_000_000), ("qid", 1_001)]
)
def test_an_id_docid_or_tag_beyond_the_bound_is_refused_at_its_line(
    tmp_path: Path, field: str, length: int
) -> None:
    fields = {"qid": CASES[0], "docid": DOCS[0], "tag": "run", field: "x" * length}
    line = f"{fields['qid']} Q0 {fields['docid']} 1 2.0 {fields['tag']}"
    started = time.perf_counter()
    with pytest.raises(ConfigError) as refused:
        _replay(tmp_path, [f"{CASES[1]} Q0 {DOCS[1]} 1 1.0 run", line])
    assert time.perf_counter() - started < 30
    message = str(refused.value)
    assert f"run.trec:2: {field} is {length} characters long; an id may have at most 1000" in (
        message
    )
    assert len(message) < 2_000
    assert not list(tmp_path.rglob("report.json"))


@pytest.mark.parametrize(
    ("text", "value"),
    [("1_000", 1.0), ("2_5.5", 2.0), ("1000", 1000.0), ("-0.5", -0.5), ("1e3", 1000.0)],
)
def test_a_score_is_read_as_c_atof_reads_it(text: str, value: float) -> None:
    assert trec_score(text) == value


def test_a_run_file_score_with_an_underscore_ranks_as_trec_eval_ranks_it(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    # trec_eval: d1 scores 1.0 (atof stops at `_`), d2 2.0: d2 ranks first.
    run.write_text("q1 Q0 d1 1 1_000 run\nq1 Q0 d2 2 2.0 run\n", encoding="utf-8")
    (case,) = read_run(str(run)).cases
    assert [item.document_id for item in case.items] == ["d2", "d1"]
    assert [item.score for item in case.items] == [2.0, 1.0]
