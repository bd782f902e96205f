"""UDA's adapter on the published dataset tree: the six subsets in every source mode, and
finance's bench pages, rows and malformed inputs (what the adapter yields, no evaluation).

Each of the problems a new user met before is a test here: entry shapes other than
finance's, the published document folders, the bare carriage return of feta_qa.csv,
answers taken per subset. Whole evaluations are in tests/integration/benchmarks/uda/.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from heta_eval.benchmarks import BenchmarkDataError, UdaBenchmark
from heta_eval.benchmarks.uda.documents import render_row
from heta_eval.benchmarks.uda.entries import page_number
from heta_eval.benchmarks.uda.files import read_qa_table
from heta_eval.records import BenchmarkWorkspace

from ....conftest import SHARED, load_benchmark

UDA = SHARED / "datasets" / "uda"

# (documents, cases, units) per subset and source with the example documents shipped.
EXPECTED = {
    ("fin", "bench"): (223, 451, 99),
    ("fin", "qa_table"): (3, 44, 3),
    ("fin", "mixed"): (222, 489, 101),
    ("tat", "bench"): (3, 9, 3),
    ("tat", "qa_table"): (3, 102, 3),
    ("tat", "mixed"): (3, 102, 3),
    ("paper_text", "bench"): (2, 3, 2),
    ("paper_text", "qa_table"): (7, 13, 7),
    ("paper_text", "mixed"): (7, 13, 7),
    ("paper_tab", "bench"): (4, 4, 4),
    ("paper_tab", "qa_table"): (4, 4, 4),
    ("paper_tab", "mixed"): (4, 4, 4),
    ("feta", "bench"): (4, 4, 4),
    ("feta", "qa_table"): (7, 11, 7),
    ("feta", "mixed"): (7, 11, 7),
    ("nq", "bench"): (4, 9, 4),
    ("nq", "qa_table"): (6, 70, 6),
    ("nq", "mixed"): (6, 70, 6),
}


@pytest.fixture(scope="module")
def uda_root() -> Path:
    if not (UDA / "extended_qa_info_bench" / "bench_nq_qa.json").is_file():
        pytest.skip(f"the whole UDA dataset tree is not at {UDA}")
    return UDA


def _load(
    tmp_path: Path, subset: str, source: str, root: Path = UDA, documents: str | None = None
) -> tuple[list, list, list]:
    """The benchmark's contents; `documents` names the folder explicitly (under the examples)."""
    folder = root / "src_doc_files_example" / documents if documents else None
    bench = UdaBenchmark(subset=subset, source=source, data_root=root, documents_dir=folder)
    return load_benchmark(bench, tmp_path)


@pytest.mark.parametrize(("subset", "source"), sorted(EXPECTED))
def test_every_subset_reads_its_own_entry_shape(
    uda_root: Path, tmp_path: Path, subset: str, source: str
) -> None:
    documents, cases, units = _load(tmp_path, subset, source, uda_root)
    assert (len(documents), len(cases), len(units)) == EXPECTED[subset, source]
    assert all(case.expected.answers for case in cases)
    with_evidence = [c for c in cases if "uda_evidence" in c.expected.metadata]
    assert with_evidence  # bench entries (and every nq question) carry evidence text
    level = "char" if subset == "feta" else "word"
    assert {c.expected.metadata["uda_evidence"]["level"] for c in with_evidence} == {level}
    assert all(isinstance(c.case_id, str) for c in cases)  # feta/nq q_uids are integers


def test_entry_shapes_become_evidence_as_the_authors_match_it(uda_root: Path, tmp_path: Path):
    _, cases, _ = _load(tmp_path, "paper_tab", "bench", uda_root)
    case = next(c for c in cases if c.case_id == "4cbe5a36b492b99f9f9fea8081fe4ba10a7a0e94")
    groups = case.expected.metadata["uda_evidence"]["groups"]
    # One group per annotator; a highlighted table is matched by its caption.
    texts = [item["text"] for group in groups for item in group]
    assert any(t.startswith("Table 5: Causal explanation") for t in texts)
    assert not any(t.startswith("FLOAT SELECTED") for t in texts)
    _, feta, _ = _load(tmp_path, "feta", "bench", uda_root)
    smallville = next(c for c in feta if c.case_id == "12844")
    (table,) = smallville.expected.metadata["uda_evidence"]["groups"][0]
    assert table["text"].startswith("Season Timeslot (ET/PT) Network Premiered ")
    assert smallville.expected.answers[0].startswith("Over ten seasons the Smallville")
    _, tat, _ = _load(tmp_path, "tat", "bench", uda_root)
    belluzzo = next(c for c in tat if c.case_id == "f1b63dd3002720ebbffa8f36d852d351")
    facts, page = belluzzo.expected.metadata["uda_evidence"]["groups"]
    assert [f["text"] for f in facts] == ["245,817", "338,317"]
    assert "Richard E. Belluzzo 160,000 178,317 338,317" in page[0]["text"]  # the shipped page


def test_documents_are_found_in_the_published_layout(uda_root: Path, tmp_path: Path) -> None:
    def folders(subset: str) -> set[str]:
        documents, _, _ = _load(tmp_path / subset, subset, "qa_table", uda_root)
        return {"/".join(Path(d.path).parent.parts[-2:]) for d in documents}

    assert folders("paper_text") == folders("paper_tab") == {"src_doc_files_example/paper_docs"}
    # Some feta questions are about pages kept in the nq folder, and the other way round.
    assert folders("feta") == {"wiki_feta_docs/pdfs", "wiki_nq_docs/pdfs"}
    assert folders("nq") == {"wiki_feta_docs/pdfs", "wiki_nq_docs/pdfs"}
    assert folders("tat") == {"src_doc_files_example/tat_docs"}


def test_a_bare_carriage_return_does_not_split_a_record(uda_root: Path, tmp_path: Path) -> None:
    _, cases, _ = _load(tmp_path, "feta", "qa_table", uda_root, "wiki_feta_docs/pdfs")
    assert len(cases) == 8  # the questions about the four pages in the feta folder
    rows = dict(read_qa_table(uda_root / "qa" / "feta_qa.csv", ("doc_name", "q_uid")))
    assert len(rows) == 1023
    row = next(r for r in rows.values() if r["q_uid"] == "8114")
    assert row["question"].startswith("Which roles and what film titles did Rashida Jones")
    assert row["answer"].startswith("In 2000, Rashida Jones starred as Karen Scarfolli")
    written = tmp_path / "t.csv"
    written.write_bytes(b"doc_name|q_uid|question|answer\nA|1|Why?\r|Because.\nA|2|How?|So.\n")
    assert [(line, r["question"]) for line, r in read_qa_table(written, ("q_uid",))] == [
        (2, "Why? "),
        (3, "How?"),
    ]
    written.write_bytes(b"doc_name|q_uid|question|answer\nA|1|Why?\nA|2|How?|So.\n")
    with pytest.raises(BenchmarkDataError, match=r"t\.csv:2: 3 fields, expected 4"):
        list(read_qa_table(written, ("q_uid",)))


def test_answers_are_taken_per_subset(uda_root: Path, tmp_path: Path) -> None:
    _, tat, _ = _load(tmp_path / "tat", "tat", "qa_table", uda_root, "tat_docs")
    # tat_qa.csv: answer "['...']" as text, answer_scale and answer_type beside it.
    for case in tat:
        assert not set(case.expected.answers) & {"span", "multi-span", "arithmetic", "thousand"}
        assert not any(a.startswith("[") for a in case.expected.answers)
        assert isinstance(case.expected.metadata["uda_answer"]["answer"], list)
    sales = next(c for c in tat if c.case_id == "4dfce6a0dde12d956bd0ba66a02e4b5a")
    assert sales.expected.answers == ("$ 93,662",)
    assert sales.expected.metadata["uda_answer"] == {
        "answer": ["$ 93,662"],
        "answer_type": "span",
        "scale": "thousand",
    }
    _, nq, _ = _load(tmp_path / "nq", "nq", "qa_table", uda_root, "wiki_nq_docs/pdfs")
    size = next(c for c in nq if c.case_id == "-8377155967940203923")
    assert len(size.expected.answers) == 2  # the short and the long answer
    assert size.expected.answers[0] == "Congress added"
    assert size.expected.answers[1].startswith("Article III of the United States Constitution")
    assert size.expected.metadata["uda_evidence"]["groups"] == [
        [{"text": size.expected.answers[1]}]
    ]


# --- finance: pages, rows and malformed inputs ----------------------------------------------


def test_page_numbers_and_rows() -> None:
    assert page_number("ADI/2009/page_59.pdf-1") == 59
    assert page_number("doc-3") is None
    header = ["$ in billions", "2016", "2015"]
    assert (
        render_row(header, ["fixed income", "578", "530"]) == "fixed income: 2016 = 578; 2015 = 530"
    )
    assert render_row(header, ["short"]) == "short"


def test_bench_pages_carry_rows_and_answers(uda_root: Path, tmp_path: Path) -> None:
    bench = UdaBenchmark(source="bench", data_root=uda_root)

    async def load() -> tuple[list, list]:
        prepared = await bench.prepare(BenchmarkWorkspace(root=tmp_path))
        return [d async for d in bench.documents(prepared)], [
            c async for c in bench.cases(prepared)
        ]

    documents, cases = asyncio.run(load())
    page = next(d for d in documents if d.document_id == "GS_2016-page_79")
    segments = json.loads(page.data)["segments"]
    row = next(s for s in segments if s["locator"].get("row_index") == 4)
    assert row["locator"] == {"page_index": 78, "table_id": "table", "row_index": 4}
    assert row["text"].startswith("total long-term assets under supervision:")
    case = next(c for c in cases if c.case_id == "GS/2016/page_79.pdf-3")
    assert case.expected.answers == ("57%", "0.57484")
    assert case.expected.evidence[0].locator == {"document_id": "GS_2016-page_79", "page_index": 78}
    assert len({d.document_id for d in documents}) == len(documents)


def test_missing_or_malformed_inputs(uda_root: Path, tmp_path: Path) -> None:
    with pytest.raises(
        BenchmarkDataError, match=r"benchmark\.data_root: .*bench_fin_qa\.json not found"
    ):
        asyncio.run(UdaBenchmark(data_root=tmp_path).prepare(BenchmarkWorkspace(root=tmp_path)))
    (tmp_path / "qa").mkdir()
    (tmp_path / "qa" / "fin_qa.csv").write_text("doc|question\nADI_2009|what?\n")
    table = UdaBenchmark(
        source="qa_table",
        data_root=tmp_path,
        documents_dir=uda_root / "src_doc_files_example" / "fin_docs",
    )
    with pytest.raises(
        BenchmarkDataError,
        match=r"fin_qa\.csv:1: header lacks \['answer_1', 'doc_name', 'q_uid'\]",
    ):
        asyncio.run(_cases(table, tmp_path))
    no_docs = UdaBenchmark(source="qa_table", data_root=tmp_path)
    with pytest.raises(BenchmarkDataError, match=r"benchmark\.documents_dir"):
        asyncio.run(no_docs.prepare(BenchmarkWorkspace(root=tmp_path)))
    bench_dir = tmp_path / "extended_qa_info_bench"
    bench_dir.mkdir()
    (bench_dir / "bench_fin_qa.json").write_text(
        json.dumps({"ADI_2009": [{"q_uid": "ADI/2009/page_1.pdf-1"}]})
    )
    with pytest.raises(BenchmarkDataError, match=r"\['ADI_2009'\]\[0\]: missing field 'question'"):
        asyncio.run(_cases(UdaBenchmark(data_root=tmp_path), tmp_path))


async def _cases(bench: UdaBenchmark, tmp_path: Path) -> list:
    prepared = await bench.prepare(BenchmarkWorkspace(root=tmp_path))
    return [c async for c in bench.cases(prepared)]
