"""The Heta bridge: a heta-framework recipe, unchanged, built and queried through the runner
and the command line (in this process)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

pytest.importorskip(
    "heta_framework", reason="heta-framework not installed (pip install 'heta-eval[heta]')"
)

from heta_eval import EvaluationReport
from heta_eval.bridges.heta import HetaRecipe, document_id_from_raw_key
from heta_eval.config.components import instantiate
from heta_eval.kb import LocalObjectStore, RawSource
from heta_eval.protocols import KnowledgeBaseLike, RecipeLike

from ...cli_in_process import CliResult, call_cli_once
from ...conftest import REPO
from ..runs import printed_report

DOCS = {
    "cats": "The cat sat on the mat.\nCats like fish and sleep all day.",
    "dogs": "Dogs bark at the mailman every morning.",
    "qubits": "Quantum computing uses qubits. Superposition lets a qubit hold 0 and 1.",
    "cats-copy": "The cat sat on the mat.\nCats like fish and sleep all day.",
}


def load_heta_recipe(name: str = "heta_full_text", **overrides: Any) -> HetaRecipe:
    """`conf/recipe/{name}.yaml` as the CLI builds it: Hydra instantiate, `_recursive_=False`."""
    config = OmegaConf.load(REPO / "conf" / "recipe" / f"{name}.yaml")
    for key, value in overrides.items():
        OmegaConf.update(config, key, value)
    return instantiate(OmegaConf.to_container(config, resolve=True), _recursive_=False)


@contextlib.contextmanager
def refused_network() -> Iterator[list[object]]:
    """Record (and refuse) every attempt to open a non-loopback connection or resolve a name."""
    attempts: list[object] = []
    connect = socket.socket.connect

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "::1", "localhost"):
            attempts.append(address)
            raise ConnectionRefusedError(f"test: no network ({address})")
        return connect(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(host)
        raise socket.gaierror(f"test: no network ({host})")

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(socket.socket, "connect", guarded_connect)
        monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
        yield attempts


@pytest.fixture
def no_network() -> Iterator[list[object]]:
    with refused_network() as attempts:
        yield attempts


def _store(tmp_path: Path) -> tuple[LocalObjectStore, list[RawSource]]:
    store = LocalObjectStore(tmp_path / "store")
    sources = []
    for doc_id, text in DOCS.items():
        key = f"raw/benchmarks/demo/test/{doc_id}/{doc_id}.txt"
        store.put(key, text.encode())
        sources.append(RawSource(key=key, document_id=doc_id, sha256=_sha(text)))
    return store, sources


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def test_recipe_from_yaml_is_a_recipe_like_with_hetas_mode_names() -> None:
    recipe = load_heta_recipe()
    assert isinstance(recipe, RecipeLike)
    assert recipe.name == "heta_full_text" and recipe.query_modes == ("full_text_search",)
    manifest = recipe.manifest()
    assert manifest["engine"] == "heta-framework" and manifest["engine_version"]
    assert manifest["steps"][1]["config"]["encoding_name"] == "unicode"
    assert manifest["steps"][1]["config"]["chunk_size"] == manifest["chunk_size"] == 1024
    json.dumps(manifest)


def test_secrets_are_masked_and_bad_specs_fail_at_construction() -> None:
    recipe = load_heta_recipe(**{"metadata": {"api_key": "sk-secret", "owner": "me"}})
    assert recipe.manifest()["metadata"] == {"api_key": "***", "owner": "me"}
    with pytest.raises(ValueError, match="not provided by the Heta steps"):
        load_heta_recipe(query_modes=["vector_search"])
    with pytest.raises(ValueError, match="IndexFullTxt"):
        load_heta_recipe(**{"steps.2._target_": "heta_framework.kb.IndexFullTxt"})


def test_build_and_query_with_provenance_offline(tmp_path: Path, no_network: list) -> None:
    store, sources = _store(tmp_path)
    recipe = load_heta_recipe(chunk_size=48, chunk_overlap=4)

    async def go() -> tuple[Any, Any, Any]:
        kb = await recipe.create_knowledge_base(name="demo/heta.kb", store=store, sources=sources)
        response = await kb.query("qubit superposition", mode="full_text_search", top_k=3)
        cats = await kb.query("cat fish", mode="full_text_search", top_k=5)
        return kb, response, cats

    kb, response, cats = asyncio.run(go())
    assert no_network == []
    assert isinstance(kb, KnowledgeBaseLike)

    top = response.results[0]
    assert top.source.document_id == "qubits"
    assert top.source.source_key == "raw/benchmarks/demo/test/qubits/qubits.txt"
    assert top.source.chunk_id == top.id and top.source.chunk_index is not None
    assert top.source.page_index == 0 and top.score > 0
    # `unicode` split: token offsets are character offsets of the window in the text.
    start, end = top.source.start_char, top.source.end_char
    assert start is not None and end is not None
    assert top.text == DOCS["qubits"][start:end].strip()
    assert response.citations and response.citations[0] == top.id
    assert response.trace["engine"] == "heta-framework"

    # Identical bytes are parsed once by Heta; the result names the other document.
    credited = {r.source.document_id for r in cats.results}
    assert len(credited) == 1 and credited <= {"cats", "cats-copy"}
    other = ({"cats", "cats-copy"} - credited).pop()
    assert cats.results[0].source.metadata["same_content_document_ids"] == [other]

    manifest = kb.manifest()
    assert [s.name for s in manifest.steps] == [
        "parse_documents",
        "split_documents",
        "index_full_text",
    ]
    assert manifest.counts["documents"] == 4 and manifest.counts["parsed_documents"] == 3
    # Heta splits the shared parsed document twice (same chunk ids); the bridge counts once.
    assert manifest.counts["chunks"] == 5 and manifest.steps[1].counts["chunk_count"] == 7
    assert manifest.build_seconds > 0 and all(s.seconds >= 0 for s in manifest.steps)
    assert kb.tokenizer["cl100k_base"] != "unavailable offline"


def test_without_a_local_tokenizer_copy_token_counts_fall_back_without_network(
    tmp_path: Path, no_network: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tiktoken.registry

    from heta_eval.bridges.heta import tokenizer

    monkeypatch.setattr(tokenizer, "_tiktoken_cache_dirs", lambda: [])
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "cl100k_base", raising=False)
    store, sources = _store(tmp_path)

    async def go() -> Any:
        return await load_heta_recipe().create_knowledge_base(
            name="fallback", store=store, sources=sources
        )

    kb = asyncio.run(go())
    assert no_network == [] and kb.tokenizer == {"cl100k_base": "unavailable offline"}
    counts = kb.heta_kb.run_record.artifacts["document_token_counts"]
    assert sorted(counts.values()) == sorted({len(t.split()) for t in DOCS.values()})
    # The patch is lifted after the build.
    from heta_framework.kb.steps import parse

    assert parse._token_count_for_text.__name__ == "_token_count_for_text"


def test_document_id_from_raw_key() -> None:
    assert document_id_from_raw_key("raw/benchmarks/b/test/d/1/x.txt") == "d/1"
    assert document_id_from_raw_key("other/key.txt") is None


@dataclass(frozen=True)
class ScifactRun:
    """`heta-eval recipe=heta_full_text` on SciFact (25 cases, untracked), run once in this
    process with the network refused: what it printed, its report, the refused attempts."""

    cli: CliResult
    report: EvaluationReport | None
    network_attempts: list[object]


@pytest.fixture(scope="module")
def scifact_run(scifact_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> ScifactRun:
    cwd = tmp_path_factory.mktemp("heta-scifact")
    args = [f"paths.root={cwd / 'outputs'}", "recipe=heta_full_text", "benchmark=beir"]
    args += [f"benchmark.data_root={scifact_dir}", "runner.limit=25", "tracking=none"]
    with refused_network() as attempts:
        done = call_cli_once("heta-eval", [*args, "runner.progress=off"], cwd=cwd)
    report = printed_report(done.stdout) if done.returncode == 0 else None
    return ScifactRun(done, report, attempts)


# Both read one evaluation of the whole SciFact corpus built by Heta (about a minute).
@pytest.mark.slow
def test_scifact_subset_through_the_runner(scifact_run: ScifactRun) -> None:
    assert scifact_run.report is not None, scifact_run.cli.stderr[-3000:]
    report = scifact_run.report
    assert scifact_run.network_attempts == []
    assert len(report.case_results) == 25 and not report.failed_cases
    ndcg = report.score_summary["full_text_search.ndcg@10"]
    print(f"heta_full_text SciFact limit=25: nDCG@10={ndcg:.4f}")
    # Plain BM25 over whole abstracts (the full comparison is benchmarks/peer_heta.py).
    assert 0.5 <= ndcg <= 0.85


@pytest.mark.slow
def test_cli_runs_the_heta_recipe(scifact_run: ScifactRun) -> None:
    assert scifact_run.cli.returncode == 0, scifact_run.cli.stderr[-3000:]
