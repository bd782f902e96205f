"""Trust model: the only code a run executes is what the user's own config names (`_target_`s
in conf/ and on the command line). Benchmark files are data: `_target_` keys, YAML tags and
pickles inside them are kept as text or bytes, never instantiated, constructed or unpickled."""

from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from heta_eval.benchmarks.beir import BeirBenchmark

from ..conftest import REPO, CliRunner, load_benchmark
from .conftest import jsonl_args, read_report, report_path, write_jsonl


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


def test_jsonl_benchmark_files_are_data_not_code(run_cli: CliRunner, tmp_path: Path) -> None:
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
    proc = run_cli(*jsonl_args(docs, cases), "tracking=none")
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
