"""The protocol records validate at construction and round-trip through JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from heta_eval.records import (
    BenchmarkCase,
    BenchmarkContents,
    BenchmarkDocument,
    BenchmarkEvidence,
    BenchmarkExpected,
    BenchmarkManifest,
    BenchmarkRunUnit,
    EvaluationCaseResult,
    EvaluationReport,
    EvaluationScore,
    RetrievedItem,
    RunFacts,
    ScoreAggregate,
    StoredDocumentKeys,
)

MANIFEST = BenchmarkManifest(name="uda_fin", split="test", build_scope="case")


def _doc(doc_id: str = "ADI_2009", **kwargs: object) -> BenchmarkDocument:
    return BenchmarkDocument(document_id=doc_id, name=f"{doc_id}.txt", data="text", **kwargs)


def _case(case_id: str = "c1") -> BenchmarkCase:
    return BenchmarkCase(case_id=case_id, query="q?")


def test_raw_key_follows_the_spec() -> None:
    doc = BenchmarkDocument(document_id="ADI_2009", name="ADI_2009.pdf", path=Path("/x.pdf"))
    assert doc.raw_key(MANIFEST) == "raw/benchmarks/uda_fin/test/ADI_2009/ADI_2009.pdf"
    assert MANIFEST.key == "uda_fin/1/test"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"data": "x", "path": Path("a.txt")}, "exactly one of data, path and source_uri"),
        ({}, "exactly one of data, path and source_uri"),
        ({"data": "x", "name": "../evil.txt"}, "name"),
        ({"data": "x", "name": "a/b.txt"}, "name"),
        ({"data": "x", "document_id": ""}, "document_id"),
        ({"data": "x", "document_id": "a/b"}, "document_id"),
    ],
)
def test_invalid_documents_name_the_problem(kwargs: dict[str, object], field: str) -> None:
    base: dict[str, object] = {"document_id": "d1", "name": "d1.txt"}
    with pytest.raises(ValidationError, match=field):
        BenchmarkDocument(**{**base, **kwargs})


def test_binary_and_text_documents_round_trip_through_json() -> None:
    for data in (b"plain text \xc3\xa9", b"\x89PNG\x00\xff"):
        doc = BenchmarkDocument(document_id="d", name="d.bin", data=data)
        again = BenchmarkDocument.model_validate_json(doc.model_dump_json())
        assert again == doc


def test_evidence_needs_something_to_match() -> None:
    with pytest.raises(ValidationError, match="at least one of reference_id, locator and text"):
        BenchmarkEvidence()
    assert (
        BenchmarkEvidence(locator={"document_id": "d", "page_index": 4}).locator["page_index"] == 4
    )


def test_records_are_frozen() -> None:
    case = _case()
    with pytest.raises(ValidationError):
        case.query = "other"  # type: ignore[misc]


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(ValidationError, match="quer"):
        BenchmarkCase.model_validate({"case_id": "c", "query": "q", "quer": "typo"})


def test_contents_refuse_duplicates_and_unknown_references() -> None:
    with pytest.raises(ValidationError, match="duplicate document_id: 'ADI_2009'"):
        BenchmarkContents(
            manifest=MANIFEST,
            documents=(_doc(), _doc()),
            cases=(_case(),),
            units=(BenchmarkRunUnit(unit_id="u"),),
        )
    with pytest.raises(ValidationError, match="duplicate case_id"):
        BenchmarkContents(
            manifest=MANIFEST,
            documents=(_doc(),),
            cases=(_case(), _case()),
            units=(BenchmarkRunUnit(unit_id="u"),),
        )
    with pytest.raises(ValidationError, match="unknown document_ids: \\['GS_2016'\\]"):
        BenchmarkContents(
            manifest=MANIFEST,
            documents=(_doc(),),
            cases=(_case(),),
            units=(BenchmarkRunUnit(unit_id="u", document_ids=("GS_2016",)),),
        )
    with pytest.raises(ValidationError, match="unknown case_ids"):
        BenchmarkContents(
            manifest=MANIFEST,
            documents=(_doc(),),
            cases=(_case(),),
            units=(BenchmarkRunUnit(unit_id="u", case_ids=("nope",)),),
        )
    with pytest.raises(ValidationError, match="yielded no cases"):
        BenchmarkContents(
            manifest=MANIFEST, documents=(_doc(),), cases=(), units=(BenchmarkRunUnit(unit_id="u"),)
        )


def test_empty_unit_ids_mean_everything() -> None:
    contents = BenchmarkContents(
        manifest=MANIFEST,
        documents=(_doc("a"), _doc("b")),
        cases=(_case("1"), _case("2")),
        units=(
            BenchmarkRunUnit(unit_id="all"),
            BenchmarkRunUnit(unit_id="b", document_ids=("b",), case_ids=("2",)),
        ),
    )
    everything, only_b = contents.units
    assert [d.document_id for d in contents.unit_documents(everything)] == ["a", "b"]
    assert [c.case_id for c in contents.unit_cases(only_b)] == ["2"]


def test_report_round_trips_and_rejects_nan_scores(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="finite"):
        EvaluationScore(name="m", value=float("nan"))
    result = EvaluationCaseResult(
        case_id="c1",
        unit_id="u",
        query_mode="bm25",
        query="q",
        scores=(
            EvaluationScore(name="m", value=0.5),
            EvaluationScore(name="s", value=None, skipped_reason="n/a"),
        ),
    )
    now = datetime.now(UTC)
    report = EvaluationReport(
        report_id="r1",
        benchmark=MANIFEST,
        knowledge_base_name="kb",
        knowledge_base_manifests=(),
        recipe_manifest={"name": "bm25"},
        query_modes=("bm25",),
        score_summary={"bm25.m": 0.5},
        score_details={"bm25.m": ScoreAggregate(mean=0.5, scored=1, skipped=0, failed=0)},
        case_results=(result,),
        started_at=now,
        finished_at=now,
        run=RunFacts(top_k=10, cases={"total": 1, "evaluated": 1, "failed": 0, "scored": 1}),
    )
    path = report.write_json(tmp_path / "report.json")
    assert EvaluationReport.read_json(path) == report
    assert result.score("m") == 0.5 and result.score("s") is None
    assert not list(tmp_path.glob(".*.tmp"))


def test_document_keys_are_their_layout_and_the_keys_named_otherwise() -> None:
    docs = [_doc(f"d{i}") for i in range(100)] + [
        BenchmarkDocument(document_id="scan", name="scan-2009.pdf", path=Path("/s.pdf")),
        BenchmarkDocument(document_id="d", name="d.md", data="x"),
    ]
    prefix = MANIFEST.raw_key_prefix
    assert prefix == "raw/benchmarks/uda_fin/test/"
    keys = StoredDocumentKeys.of(prefix, {d.document_id: d.raw_key(MANIFEST) for d in docs})
    assert keys.name_suffix == ".txt" and keys.stored == 102
    assert keys.exceptions == {"scan": f"{prefix}scan/scan-2009.pdf", "d": f"{prefix}d/d.md"}
    assert all(keys.key(d.document_id) == d.raw_key(MANIFEST) for d in docs)
    # Nothing in common (no name starts with its id): every key is listed.
    odd = StoredDocumentKeys.of(prefix, {"a": f"{prefix}a/x.txt", "b": f"{prefix}b/y.txt"})
    assert odd.name_suffix is None and odd.key("a") == f"{prefix}a/x.txt"
    assert odd.key("c") is None
    run = RunFacts(
        top_k=10,
        cases={"total": 0, "evaluated": 0, "failed": 0, "scored": 0},
        document_keys=keys,
        document_errors={"lost": "OSError: gone"},
    )
    assert run.document_key("d7") == f"{prefix}d7/d7.txt" and run.document_key("lost") is None
    assert RunFacts.model_validate_json(run.model_dump_json()) == run


def test_a_report_that_listed_every_document_key_is_read(tmp_path: Path) -> None:
    now = datetime.now(UTC).isoformat()
    # Schema 2 listed every key; a document may be called like a field of the layout.
    listed = {"kelp": "raw/benchmarks/b/test/kelp/kelp.txt", "stored": "raw/b/stored/x.txt"}
    old = {
        "report_id": "r1",
        "schema_version": "2",
        "benchmark": {"name": "b"},
        "knowledge_base_name": "kb",
        "knowledge_base_manifests": [],
        "recipe_manifest": {"name": "bm25"},
        "query_modes": ["bm25"],
        "score_summary": {},
        "case_results": [],
        "started_at": now,
        "finished_at": now,
        "run": {
            "top_k": 10,
            "document_keys": listed,
            "cases": {"total": 0, "evaluated": 0, "failed": 0, "scored": 0},
        },
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    report = EvaluationReport.read_json(path)
    assert report.run.document_keys.stored == 2 and report.run.document_keys.exceptions == listed
    assert report.run.document_key("stored") == "raw/b/stored/x.txt"
    assert report.run.document_key("other") is None
    # Schema 1 kept them in `metadata`.
    del old["run"], old["schema_version"]
    old["metadata"] = {"document_keys": listed, "top_k": 10}
    path.write_text(json.dumps(old), encoding="utf-8")
    assert EvaluationReport.read_json(path).run.document_key("kelp") == listed["kelp"]
    assert EvaluationReport.read_json(report.write_json(path)) == report


def _report_with(items: tuple[RetrievedItem, ...], **fields: object) -> EvaluationReport:
    now = datetime.now(UTC)
    result = EvaluationCaseResult(
        case_id="c1", unit_id="u", query_mode="bm25", query="q", retrieved=items
    )
    keys = StoredDocumentKeys(prefix="raw/benchmarks/b/test/", name_suffix=".txt", stored=2)
    return EvaluationReport(
        report_id="r1",
        benchmark=MANIFEST,
        knowledge_base_name="kb",
        knowledge_base_manifests=(),
        recipe_manifest={"name": "bm25"},
        query_modes=("bm25",),
        score_summary={},
        case_results=(result,),
        started_at=now,
        finished_at=now,
        run=RunFacts(
            top_k=10,
            cases={"total": 1, "evaluated": 1, "failed": 0, "scored": 1},
            document_keys=keys,
        ),
        **fields,
    )


def test_a_retrieved_key_left_out_is_the_one_the_layout_gives(tmp_path: Path) -> None:
    derived = RetrievedItem(id="kelp#0", score=1.0, document_id="kelp")
    own = RetrievedItem(id="x#0", score=0.5, document_id="x", source_key="elsewhere/x.pdf")
    report = _report_with((derived, own))
    assert report.schema_version == "4"
    read = EvaluationReport.read_json(report.write_json(tmp_path / "report.json"))
    first, second = read.case_results[0].retrieved
    assert read.source_key(first) == "raw/benchmarks/b/test/kelp/kelp.txt"
    assert read.source_key(second) == "elsewhere/x.pdf"
    # Schema 3 and older kept every item's key: one without a key has none to give back.
    old = _report_with((derived, own), schema_version="3")
    read = EvaluationReport.read_json(old.write_json(tmp_path / "old.json"))
    assert read.source_key(read.case_results[0].retrieved[0]) is None
    assert read.source_key(read.case_results[0].retrieved[1]) == "elsewhere/x.pdf"


def test_expected_answers_default_to_empty() -> None:
    case = BenchmarkCase(case_id="c", query="q", expected=BenchmarkExpected(answers=("4",)))
    assert case.expected.evidence == ()


def test_text_that_starts_with_the_base64_marker_stays_text() -> None:
    for text in ("base64:aGVsbG8gd29ybGQ=", "base64: is an encoding"):
        doc = BenchmarkDocument(document_id="d", name="d.txt", data=text)
        assert doc.data == text.encode()
        assert BenchmarkDocument.model_validate_json(doc.model_dump_json()) == doc
