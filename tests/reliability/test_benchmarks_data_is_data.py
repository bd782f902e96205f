"""A data file is data (issue 17, items 3, 4 and 6): documents.jsonl cannot make a local file
outside its directory or an internal URL a document, `text` is never decoded by its prefix,
binary content has its own field, and unit ids are strings with `file:line` errors."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from heta_eval.benchmarks import JsonlBenchmark
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError

from ..conftest import CliRunner, load_benchmark
from .conftest import jsonl_args, nothing_written, write_jsonl

CASE = {"case_id": "q1", "query": "root account", "evidence": [{"locator": {"document_id": "p"}}]}


def _docs(tmp_path: Path, *rows: object) -> tuple[Path, Path]:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    return write_jsonl(data / "docs.jsonl", list(rows)), write_jsonl(data / "cases.jsonl", [CASE])


def _load_error(tmp_path: Path, docs: Path, cases: Path, **settings: bool) -> str:
    with pytest.raises(BenchmarkDataError) as caught:
        load_benchmark(JsonlBenchmark(docs, cases, **settings), tmp_path / "ws")
    return str(caught.value)


@pytest.mark.slow
def test_a_path_outside_the_data_directory_is_refused_by_the_cli(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    docs, cases = _docs(tmp_path, {"document_id": "p", "path": "/etc/passwd"})
    proc = run_cli(*jsonl_args(docs, cases, "recipe=bm25_extractive", "runner.offline=true"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{docs}:1: path: '/etc/passwd' resolves to /etc/passwd, outside" in proc.stderr
    assert "benchmark.allow_paths_outside_data_dir=true" in proc.stderr
    assert "root:" not in proc.stdout + proc.stderr
    assert nothing_written(tmp_path / "outputs")


def test_paths_are_judged_after_dotdot_and_symlinks(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the benchmark")
    data = tmp_path / "data"
    data.mkdir()
    (data / "inside.txt").write_text("inside the data directory")
    (data / "link.txt").symlink_to(secret)
    (data / "sub").mkdir()
    for line in ("../secret.txt", "sub/../../secret.txt", "link.txt"):
        docs, cases = _docs(tmp_path, {"document_id": "p", "path": line})
        assert f"{docs}:1: path: {line!r} resolves to {secret}" in _load_error(
            tmp_path, docs, cases
        )
    docs, cases = _docs(tmp_path, {"document_id": "p", "path": "sub/../inside.txt"})
    documents, _, _ = load_benchmark(JsonlBenchmark(docs, cases), tmp_path / "ws")
    assert documents[0].path == data / "inside.txt"
    # The user's own opt-in, named for what it allows.
    docs, cases = _docs(tmp_path, {"document_id": "p", "path": "link.txt"})
    allowed = JsonlBenchmark(docs, cases, allow_paths_outside_data_dir=True)
    assert load_benchmark(allowed, tmp_path / "ws")[0][0].path == secret


@pytest.mark.parametrize(
    "uri",
    [
        "file:///etc/passwd",
        "http://127.0.0.1:8080/admin",
        "http://localhost/x",
        "http://api.localhost/x",
        "http://10.1.2.3/x",
        "http://192.168.0.1/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/x",
        "http://[::ffff:127.0.0.1]/x",
        "http://2130706433/x",
        "http://0/x",
        "ftp://example.org/x",
        "gopher://example.org/x",
    ],
)
def test_local_and_private_source_uris_are_refused(tmp_path: Path, uri: str) -> None:
    docs, cases = _docs(
        tmp_path, {"document_id": "ok", "text": "fine"}, {"document_id": "p", "source_uri": uri}
    )
    assert f"{docs}:2: source_uri: " in _load_error(tmp_path, docs, cases)


def test_private_urls_and_file_uris_need_their_opt_in(tmp_path: Path) -> None:
    docs, cases = _docs(tmp_path, {"document_id": "p", "source_uri": "http://10.0.0.5/doc.txt"})
    assert "benchmark.allow_private_urls=true" in _load_error(tmp_path, docs, cases)
    allowed = JsonlBenchmark(docs, cases, allow_private_urls=True)
    assert load_benchmark(allowed, tmp_path / "ws")[0][0].source_uri == "http://10.0.0.5/doc.txt"
    docs, cases = _docs(tmp_path, {"document_id": "p", "source_uri": "https://example.org/d.txt"})
    assert load_benchmark(JsonlBenchmark(docs, cases), tmp_path / "ws")[0][0].source_uri
    docs, cases = _docs(tmp_path, {"document_id": "p", "source_uri": "file:///etc/hostname"})
    assert "file: URIs are refused" in _load_error(tmp_path, docs, cases)
    allowed = JsonlBenchmark(docs, cases, allow_paths_outside_data_dir=True)
    assert load_benchmark(allowed, tmp_path / "ws")[0][0].source_uri == "file:///etc/hostname"


def test_text_is_never_decoded_and_binary_has_its_own_field(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x01binary"
    docs, cases = _docs(
        tmp_path,
        {"document_id": "p", "text": "base64:aGVsbG8gd29ybGQ="},
        {"document_id": "q", "text": "base64: is an encoding"},
        {"document_id": "r", "content_base64": base64.b64encode(png).decode()},
    )
    documents, _, _ = load_benchmark(JsonlBenchmark(docs, cases), tmp_path / "ws")
    by_id = {d.document_id: d for d in documents}
    assert by_id["p"].data == b"base64:aGVsbG8gd29ybGQ="
    assert by_id["q"].data == b"base64: is an encoding"
    assert by_id["r"].data == png
    assert (by_id["r"].name, by_id["r"].media_type) == ("r.bin", "application/octet-stream")
    # The report's JSON form tells text from binary.
    assert by_id["p"].model_dump(mode="json")["data"].startswith("base64:YmFzZTY0O")


def test_bad_base64_and_two_sources_name_file_and_line(tmp_path: Path) -> None:
    docs, cases = _docs(
        tmp_path, {"document_id": "a", "text": "ok"}, {"document_id": "b", "content_base64": "no!"}
    )
    assert f"{docs}:2: content_base64: not valid base64" in _load_error(tmp_path, docs, cases)
    docs, cases = _docs(tmp_path, {"document_id": "b", "text": "x", "content_base64": "eA=="})
    assert f"{docs}:1: exactly one of text, content_base64, path and source_uri" in _load_error(
        tmp_path, docs, cases
    )


@pytest.mark.slow
def test_unit_ids_are_bare_strings_named_by_file_and_line(
    run_cli: CliRunner, tmp_path: Path
) -> None:
    docs, cases = _docs(tmp_path, {"document_id": "p", "text": "root", "unit_id": "../x"})
    proc = run_cli(*jsonl_args(docs, cases, "benchmark.build_scope=case"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "pydantic" not in proc.stderr
    assert f"{docs}:1: unit_id must be a bare file name" in proc.stderr
    assert nothing_written(tmp_path / "outputs")
    # The coercion rule: none. A number is refused, so 1 and "1" never merge into one unit.
    data = tmp_path / "data"
    docs = write_jsonl(
        data / "docs.jsonl",
        [
            {"document_id": "a", "text": "a", "unit_id": "1"},
            {"document_id": "b", "text": "b", "unit_id": 1},
        ],
    )
    assert f'{docs}:2: unit_id: expected a non-empty string, got int 1 (write "1"' in _load_error(
        tmp_path, docs, data / "cases.jsonl", build_scope="case"
    )
    cases = write_jsonl(data / "cases.jsonl", [{**CASE, "unit_id": 1}])
    docs = write_jsonl(data / "docs.jsonl", [{"document_id": "p", "text": "a", "unit_id": "1"}])
    assert f"{cases}:1: unit_id: expected a non-empty string" in _load_error(
        tmp_path, docs, cases, build_scope="case"
    )
