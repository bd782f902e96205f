"""Documents a knowledge base must survive: an empty or unparseable document is recorded and
reported while the rest is scored; a legal 234-character document name is stored and
retrieved (issue 17, item 5); a huge document is chunked in bounded memory; object keys
never leave the store's root."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path
from typing import NamedTuple

import pytest

from heta_eval.kb import FixedSizeChunker, InvalidKeyError, LocalObjectStore
from heta_eval.kb.chunking import _WORD, _unit_windows, _windows
from heta_eval.kb.documents import RawSource
from heta_eval.kb.parsers import PlainTextParser
from heta_eval.records import EvaluationReport

from ..cli_in_process import CliResult
from .conftest import cli_once, jsonl_args, read_report, report_path, write_jsonl

LONG = "n" * 230 + ".txt"  # 234 characters: a legal file name (at most 255 bytes)
STORED = "raw/benchmarks/jsonl/test"


def _case(case_id: str, query: str, document_id: str) -> dict[str, object]:
    return {
        "case_id": case_id,
        "query": query,
        "evidence": [{"locator": {"document_id": document_id}}],
    }


class Evaluated(NamedTuple):
    """A run's output, its report and its paths.root."""

    done: CliResult
    report: EvaluationReport
    root: Path


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Evaluated:
    """One run of three scored documents, one with a long name, beside an empty document
    and a PDF that cannot be read; its output and report."""
    root = tmp_path_factory.mktemp("bad-documents")
    (root / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage")
    docs = write_jsonl(
        root / "docs.jsonl",
        [
            {"document_id": "a", "text": "Alpha facts are here."},
            {"document_id": "b", "text": "Beta facts are there."},
            {"document_id": "kelp", "name": LONG, "text": "The kelp forest grows fast."},
            {"document_id": "blank", "text": " \n"},
            {
                "document_id": "broken",
                "path": "broken.pdf",
                "name": "broken.pdf",
                "media_type": "application/pdf",
            },
        ],
    )
    cases = write_jsonl(
        root / "cases.jsonl",
        [
            _case("q1", "alpha facts", "a"),
            _case("q2", "beta facts", "b"),
            _case("q3", "kelp forest", "kelp"),
        ],
    )
    done = cli_once(root, *jsonl_args(docs, cases), "tracking=none")
    assert done.returncode == 0, done.stderr
    return Evaluated(done, read_report(report_path(done.stdout)), root / "outputs")


def test_an_empty_document_is_reported_and_the_rest_is_scored(
    evaluated: Evaluated,
) -> None:
    done, report, _ = evaluated
    (manifest,) = report.knowledge_base_manifests
    key = f"{STORED}/blank/blank.txt"
    assert manifest.document_errors[key] == "EmptyDocument: no text after parsing"
    assert manifest.counts["documents"] == 3 and not report.failed_cases
    assert "2 document(s) not indexed" in done.stdout and key in done.stdout


def test_an_unparseable_pdf_is_a_document_error_and_the_unit_goes_on(
    evaluated: Evaluated,
) -> None:
    done, report, _ = evaluated
    (manifest,) = report.knowledge_base_manifests
    key = f"{STORED}/broken/broken.pdf"
    assert sorted(manifest.document_errors) == [f"{STORED}/blank/blank.txt", key]
    assert manifest.document_errors[key].startswith(f"ParseError: {key}: unreadable PDF (")
    assert len(report.case_results) == 3 and not report.failed_cases
    assert report.score_summary["bm25.evidence_recall@1"] == 1.0
    assert key in done.stdout and "unreadable PDF" in done.stdout


def test_a_234_character_document_name_is_stored_and_scored(
    evaluated: Evaluated,
) -> None:
    _, report, root = evaluated
    assert report.run.document_errors == {}
    # Named otherwise than the other documents: listed in full with the key layout.
    assert report.run.document_keys.exceptions["kelp"].endswith("/kelp/" + LONG)
    assert report.run.document_key("kelp") == report.run.document_keys.exceptions["kelp"]
    by_case = {r.case_id: r for r in report.case_results}
    assert by_case["q3"].error is None and by_case["q3"].score("evidence_recall@1") == 1.0
    assert list(root.rglob(LONG)) and not list(root.rglob(f".{LONG[:60]}*.tmp"))


@pytest.mark.parametrize("words", [200, 7, 5])
def test_streaming_windows_equal_the_list_windows(words: int) -> None:
    rng = random.Random(words)
    text = " ".join("x" * rng.randint(1, 6) for _ in range(words))
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    for size in (1, 3, 5, 50):
        for overlap in {0, size // 2, size - 1}:
            expected = [(spans[a][0], spans[b][1]) for a, b in _windows(len(spans), size, overlap)]
            assert _unit_windows(_WORD, text, 0, len(text), size, overlap) == expected


def _big_text(path: Path, size: int) -> Path:
    rng = random.Random(0)
    vocabulary = [f"term{i}" for i in range(5000)]
    line = (" ".join(rng.choice(vocabulary) for _ in range(2000)) + "\n").encode()
    with path.open("wb") as handle:
        for _ in range(size // len(line)):
            handle.write(line)
    return path


@pytest.mark.parametrize(
    "megabytes", [5, pytest.param(50, marks=pytest.mark.slow)], ids=["5MB", "50MB"]
)
def test_a_huge_document_is_chunked_in_bounded_memory(tmp_path: Path, megabytes: int) -> None:
    path = _big_text(tmp_path / "big.txt", megabytes * 1_000_000)
    size = path.stat().st_size
    source = RawSource(key="raw/big.txt", document_id="big")
    tracemalloc.start()
    try:
        parsed = PlainTextParser().parse(source, path.read_bytes())
        chunks = FixedSizeChunker(chunk_size=200, chunk_overlap=20).chunk(parsed)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The bytes, the decoded text and the chunk texts (10% overlap) are each about the size
    # of the file; a word-offset list of the whole text used to make it 15 times the size.
    assert peak < 4 * size, f"peak {peak / 1e6:.0f} MB for a {size / 1e6:.0f} MB file"
    assert chunks[-1].end_char == len(parsed.text.rstrip())
    assert len(chunks) == pytest.approx(len(parsed.text.split()) / 180, rel=0.01)


@pytest.mark.parametrize(
    "key", ["../escape.txt", "/etc/passwd", "raw/../../x", "raw//x", "raw\\x", "", "raw/./x"]
)
def test_object_keys_that_escape_the_store_root_are_refused(tmp_path: Path, key: str) -> None:
    store = LocalObjectStore(tmp_path / "store")
    with pytest.raises(InvalidKeyError):
        store.put(key, b"x")
    assert not (tmp_path / "escape.txt").exists()


def test_object_keys_through_a_symlink_out_of_the_root_are_refused(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path / "store")
    (tmp_path / "outside").mkdir()
    (store.root / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(InvalidKeyError, match="escapes"):
        store.put("link/x.txt", b"x")
