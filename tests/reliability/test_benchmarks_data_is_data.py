"""A data file is data (issue 17, items 3, 4 and 6; the trust model): the only code a run
executes is what the user's own config names (`_target_`s in conf/ and on the command line).
Benchmark files cannot make a local file outside their directory or an internal URL a
document, `text` is never decoded by its prefix, binary content has its own field, unit ids
are strings with `file:line` errors; `_target_` keys, YAML tags and pickles inside them are
kept as text or bytes, never instantiated, constructed or unpickled; archive members never
leave the extraction directory."""

from __future__ import annotations

import ast
import base64
import json
import pickle
import tarfile
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from heta_eval.benchmarks import JsonlBenchmark
from heta_eval.benchmarks.archives import UnsafeArchiveError, extract_archive
from heta_eval.benchmarks.beir import BeirBenchmark
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError

from ..archive_files import make_tar, make_zip, tar_member
from ..conftest import REPO, InProcessCli, load_benchmark
from .conftest import jsonl_args, nothing_written, read_report, report_path, write_jsonl

CASE = {"case_id": "q1", "query": "root account", "evidence": [{"locator": {"document_id": "p"}}]}


def _docs(tmp_path: Path, *rows: object) -> tuple[Path, Path]:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    return write_jsonl(data / "docs.jsonl", list(rows)), write_jsonl(data / "cases.jsonl", [CASE])


def _load_error(tmp_path: Path, docs: Path, cases: Path, **settings: bool) -> str:
    with pytest.raises(BenchmarkDataError) as caught:
        load_benchmark(JsonlBenchmark(docs, cases, **settings), tmp_path / "ws")
    return str(caught.value)


def test_a_path_outside_the_data_directory_is_refused_by_the_cli(
    cli: InProcessCli, tmp_path: Path
) -> None:
    docs, cases = _docs(tmp_path, {"document_id": "p", "path": "/etc/passwd"})
    proc = cli(*jsonl_args(docs, cases, "recipe=bm25_extractive", "runner.offline=true"))
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


def test_unit_ids_are_bare_strings_named_by_file_and_line(
    cli: InProcessCli, tmp_path: Path
) -> None:
    docs, cases = _docs(tmp_path, {"document_id": "p", "text": "root", "unit_id": "../x"})
    proc = cli(*jsonl_args(docs, cases, "benchmark.build_scope=case"))
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


class Detonator:
    """Unpickling this creates the file `path` (a pickle payload, as an attacker would)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (Path.touch, (self.path,))


def _payloads(marker: Path) -> dict[str, object]:
    return {
        "target": {"_target_": "pathlib.Path.touch", "self": str(marker)},
        "yaml": f"!!python/object/apply:pathlib.Path.touch ['{marker}']",
        "hydra": "${oc.env:HOME} ${now:%Y}",  # interpolations in data stay literal text
    }


def test_jsonl_benchmark_files_are_data_not_code(cli: InProcessCli, tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    payloads = _payloads(marker)
    (tmp_path / "payload.pkl").write_bytes(pickle.dumps(Detonator(marker)))
    docs = write_jsonl(
        tmp_path / "docs.jsonl",
        [
            {"document_id": "tagged", "text": f"Kelp note. {payloads['yaml']} {payloads['hydra']}"},
            {"document_id": "targeted", "text": "Comet note.", "metadata": payloads["target"]},
            {
                "document_id": "json",
                "name": "json.json",
                "media_type": "application/json",
                "text": json.dumps([payloads["target"]]),
            },
            {
                "document_id": "pickled",
                "name": "payload.pkl",
                "path": "payload.pkl",
                "media_type": "application/python-pickle",
            },
        ],
    )
    cases = write_jsonl(
        tmp_path / "cases.jsonl",
        [
            {
                "case_id": "q1",
                "query": "kelp note",
                "evidence": [{"locator": {"document_id": "tagged", **payloads["target"]}}],
                "metadata": payloads["target"],
            },
        ],
    )
    proc = cli(*jsonl_args(docs, cases), "tracking=none")
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    report = read_report(report_path(proc.stdout))
    store = tmp_path / "outputs" / "store" / "raw" / "benchmarks" / "jsonl" / "test"
    stored = (store / "tagged" / "tagged.txt").read_text()
    assert payloads["yaml"] in stored and payloads["hydra"] in stored  # verbatim
    assert (store / "pickled" / "payload.pkl").read_bytes() == (
        tmp_path / "payload.pkl"
    ).read_bytes()
    (manifest,) = report.knowledge_base_manifests
    assert "no parser for media type 'application/python-pickle'" in " ".join(
        manifest.document_errors.values()
    )
    assert report.case_results[0].retrieved[0].document_id == "tagged"


def test_beir_files_are_data_not_code(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    payloads = _payloads(marker)
    write_jsonl(
        tmp_path / "corpus.jsonl",
        [{"_id": "d1", "title": payloads["yaml"], "text": "kelp", "metadata": payloads["target"]}],
    )
    write_jsonl(tmp_path / "queries.jsonl", [{"_id": "q1", "text": "kelp", **payloads["target"]}])
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    documents, cases, _ = load_benchmark(BeirBenchmark("trust", data_root=tmp_path), tmp_path)
    assert documents[0].data == f"{payloads['yaml']}\nkelp".encode()
    assert cases[0].query == "kelp"
    assert not marker.exists()


def test_yaml_tags_are_refused_by_the_config_loader(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    config = tmp_path / "evil.yaml"
    config.write_text(f"recipe: {_payloads(marker)['yaml']}\n")
    with pytest.raises(yaml.constructor.ConstructorError):
        OmegaConf.load(config)
    with pytest.raises(yaml.constructor.ConstructorError):
        yaml.safe_load(config.read_text())
    assert not marker.exists()


def _calls(tree: ast.AST) -> list[tuple[str, ast.Call]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                found.append((f"{func.value.id}.{func.attr}", node))
            elif isinstance(func, ast.Name):
                found.append((func.id, node))
    return found


def test_the_package_uses_only_safe_loaders() -> None:
    """No unsafe YAML load, pickle, marshal, eval or exec in heta_eval; numpy never pickles."""
    unsafe = {"yaml.load", "yaml.unsafe_load", "yaml.full_load", "pickle.load", "pickle.loads"}
    unsafe |= {"marshal.loads", "eval", "exec", "shelve.open", "dill.load", "joblib.load"}
    problems = []
    for path in sorted((REPO / "heta_eval").rglob("*.py")):
        for name, call in _calls(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(REPO)}:{call.lineno}: {name}"
            if name in unsafe:
                problems.append(where)
            if name == "np.load":
                pickles = [k for k in call.keywords if k.arg == "allow_pickle"]
                if (
                    not pickles
                    or not isinstance(pickles[0].value, ast.Constant)
                    or (pickles[0].value.value is not False)
                ):
                    problems.append(f"{where} without allow_pickle=False")
    assert problems == []


UNSAFE_ZIPS = {
    "parent": ({"ok.txt": b"fine", "../evil.txt": b"evil"}, None, "../evil.txt"),
    "absolute": ({"ok.txt": b"fine", "/tmp/evil": b"evil"}, None, "/tmp/evil"),
    "drive": ({"C:/evil.txt": b"evil"}, None, "C:/evil.txt"),
    "symlink": ({"ok.txt": b"fine"}, {"link": "/etc/passwd"}, "link"),
}


@pytest.mark.parametrize("case", sorted(UNSAFE_ZIPS))
def test_zip_members_that_escape_the_extraction_directory_are_refused(
    tmp_path: Path, case: str
) -> None:
    members, symlinks, bad = UNSAFE_ZIPS[case]
    archive = make_zip(tmp_path / "bad.zip", members, symlinks)
    workdir = tmp_path / "work"
    workdir.mkdir()
    with pytest.raises(UnsafeArchiveError) as info:
        extract_archive(archive, workdir / "out")
    assert bad in str(info.value)
    assert "bad.zip" in str(info.value)
    assert not (workdir / "out").exists()
    assert not (tmp_path / "evil.txt").exists()
    assert [p.name for p in workdir.iterdir() if not p.name.endswith(".lock")] == []


UNSAFE_TARS = {
    "parent": (tar_member("../evil.txt"), "../evil.txt"),
    "nested-parent": (tar_member("a/../../evil.txt"), "a/../../evil.txt"),
    "absolute": (tar_member("/tmp/evil"), "/tmp/evil"),
    "symlink": (tar_member("link", tarfile.SYMTYPE, "/etc/passwd"), "link"),
    "hardlink": (tar_member("hard", tarfile.LNKTYPE, "/etc/passwd"), "hard"),
    "fifo": (tar_member("pipe", tarfile.FIFOTYPE), "pipe"),
    "device": (tar_member("dev", tarfile.CHRTYPE), "dev"),
}


@pytest.mark.parametrize("case", sorted(UNSAFE_TARS))
def test_tar_members_that_escape_the_extraction_directory_are_refused(
    tmp_path: Path, case: str
) -> None:
    member, bad = UNSAFE_TARS[case]
    # The good member comes first: nothing may be written before every member is checked.
    archive = make_tar(tmp_path / "bad.tar.gz", [tar_member("ok.txt"), member])
    workdir = tmp_path / "work"
    workdir.mkdir()
    with pytest.raises(UnsafeArchiveError) as info:
        extract_archive(archive, workdir / "out")
    assert bad in str(info.value)
    assert "bad.tar.gz" in str(info.value)
    assert not (workdir / "out").exists()
    assert not (tmp_path / "evil.txt").exists()
    assert [p.name for p in workdir.iterdir() if not p.name.endswith(".lock")] == []
