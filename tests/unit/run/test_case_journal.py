"""The case journal cuts a torn last line (a kill mid-write) and ignores another
configuration's journal."""

from __future__ import annotations

from pathlib import Path

from heta_eval.records import EvaluationCaseResult
from heta_eval.run.journal import CaseJournal


def test_journal_cuts_a_torn_last_line_and_ignores_other_configs(tmp_path: Path) -> None:
    journal = CaseJournal(tmp_path / "journal.jsonl", "hash-a")
    results = [
        EvaluationCaseResult(case_id=f"c{i}", unit_id="u", query_mode="bm25", query="q")
        for i in range(3)
    ]
    journal.record_cases(results)
    journal.close()
    with (tmp_path / "journal.jsonl").open("a") as handle:
        handle.write('{"kind": "case", "result": {"case_id": "c3", "unit')
    done, _ = CaseJournal(tmp_path / "journal.jsonl", "hash-a").read()
    assert sorted(k[1] for k in done) == ["c0", "c1", "c2"]
    assert (tmp_path / "journal.jsonl").read_text().endswith("}\n")
    assert CaseJournal(tmp_path / "journal.jsonl", "hash-b").read() == ({}, {})
