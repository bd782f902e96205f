"""Suites' definitions and helpers: every bundled suite valid with its references cited,
beir_local's members found under its data root, a reference scoped to documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval.config.resolvers import SuiteDataError, beir_datasets
from heta_eval.records.suite import suite_from_config
from heta_eval.results.suite_table import scoped_mean
from heta_eval.sweep.reproduce import read_suite, suite_names

from ...compare_helpers import modes_report


def test_every_suite_definition_is_valid_and_cites_its_numbers() -> None:
    assert {"uda", "beir_local", "sample"} <= set(suite_names())
    uda = read_suite("uda")
    assert uda.members == ("fin", "tat", "paper_text", "paper_tab", "feta", "nq")
    assert uda.member_key == "benchmark.subset"
    for name in suite_names():
        for ref in read_suite(name).references:
            assert ref.source and (ref.checked or ref.differs), ref
    with pytest.raises(ValueError, match=r"^suite: reference for member 'fiqa' .*not a member"):
        suite_from_config(
            {
                "name": "x",
                "member_key": "benchmark.subset",
                "members": ["fin"],
                "references": [
                    {"member": "fiqa", "recipe": "bm25", "metric": "ndcg@10", "value": 0.2,
                     "source": "somewhere"},
                ],
            }
        )  # fmt: skip


def test_beir_local_finds_the_datasets_under_its_root(tmp_path: Path) -> None:
    (tmp_path / "nfcorpus" / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl"):
        (tmp_path / "nfcorpus" / name).write_text("")
    (tmp_path / "notes").mkdir()
    assert beir_datasets(str(tmp_path)) == ["nfcorpus"]
    with pytest.raises(SuiteDataError, match="no BEIR dataset under"):
        beir_datasets(str(tmp_path / "notes"))
    with pytest.raises(SuiteDataError, match=r"suite\.data_root: required"):
        beir_datasets("???")


def test_a_reference_scoped_to_documents_averages_their_cases_only() -> None:
    report = modes_report("r", {"bm25": {"m@1": [0.2, 0.4, None, 1.0]}})
    assert scoped_mean(report, "m@1", ()) == (pytest.approx(1.6 / 3), 3)
    other = report.model_copy(
        update={
            "case_results": tuple(
                r.model_copy(update={"unit_id": "doc2"}) if r.case_id == "c3" else r
                for r in report.case_results
            )
        }
    )
    assert scoped_mean(other, "m@1", ("doc2",)) == (1.0, 1)
    assert scoped_mean(other, "bm25.m@1", ("u",)) == (pytest.approx(0.3), 2)
