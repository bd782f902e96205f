"""A download that failed is never kept (issue 23, item 13): a half-downloaded archive or one
with an unsafe member fails the run, and a later run with a good `benchmark.base_url` works,
instead of failing with the same error forever from the cache."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from heta_eval.benchmarks.archives import UnsafeArchiveError
from heta_eval.benchmarks.beir import BeirBenchmark
from tests.conftest import load_benchmark

DATASET = "tinybeir"  # no published member checksums: the archive is all there is to trust


def _members() -> dict[str, str]:
    corpus = [{"_id": f"d{i}", "title": "", "text": f"document {i} about kelp"} for i in range(3)]
    return {
        f"{DATASET}/corpus.jsonl": "".join(json.dumps(d) + "\n" for d in corpus),
        f"{DATASET}/queries.jsonl": json.dumps({"_id": "q1", "text": "kelp"}) + "\n",
        f"{DATASET}/qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
    }


def _zip(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def _mirror(root: Path, payload: bytes) -> str:
    root.mkdir(parents=True)
    (root / f"{DATASET}.zip").write_bytes(payload)
    return root.as_uri()


def _bench(tmp_path: Path, base_url: str) -> BeirBenchmark:
    return BeirBenchmark(dataset=DATASET, cache_dir=tmp_path / "cache", base_url=base_url)


def _cache_files(tmp_path: Path) -> list[str]:
    beir = tmp_path / "cache" / "beir"
    return sorted(p.name for p in beir.iterdir() if not p.name.endswith(".lock"))


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (_zip(_members())[:300], ValueError),  # cut off: "not a supported archive"
        (_zip({**_members(), "../escape.txt": "x"}), UnsafeArchiveError),
    ],
    ids=["half-downloaded", "unsafe-member"],
)
def test_an_archive_that_failed_is_not_kept_and_a_good_mirror_works(
    tmp_path: Path, bad: bytes, error: type[Exception]
) -> None:
    with pytest.raises(error):
        load_benchmark(_bench(tmp_path, _mirror(tmp_path / "bad", bad)), tmp_path, offline=False)
    assert _cache_files(tmp_path) == []  # no archive, no extraction, no partial file

    good = _mirror(tmp_path / "good", _zip(_members()))
    documents, cases, _ = load_benchmark(_bench(tmp_path, good), tmp_path, offline=False)
    assert [d.document_id for d in documents] == ["d0", "d1", "d2"]
    assert [c.case_id for c in cases] == ["q1"]


def test_a_cached_archive_from_another_mirror_is_not_reused(tmp_path: Path) -> None:
    """Without a checksum only the URI says which archive a cached file is."""
    first = _mirror(tmp_path / "one", _zip(_members()))
    load_benchmark(_bench(tmp_path, first), tmp_path, offline=False)
    changed = {**_members(), f"{DATASET}/queries.jsonl": json.dumps({"_id": "q9", "text": "x"})}
    changed[f"{DATASET}/qrels/test.tsv"] = "query-id\tcorpus-id\tscore\nq9\td0\t1\n"
    second = _mirror(tmp_path / "two", _zip(changed))
    _, cases, _ = load_benchmark(_bench(tmp_path, second), tmp_path, offline=False)
    assert [c.case_id for c in cases] == ["q9"]
