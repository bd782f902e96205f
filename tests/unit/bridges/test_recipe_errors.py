"""A bridge recipe that cannot work fails at assembly, before any work, in one line that
names the key and, for a missing package, the pip command: a missing extra, a factory that
returns what the bridge cannot query, an argument the factory does not take."""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import pytest

import heta_eval
from heta_eval.config.resolve import ConfigError

from .factories import require_frameworks

require_frameworks("langchain_core", "llama_index.core", "haystack")

FRAMEWORKS = {
    "langchain": "langchain-core",
    "llamaindex": "llama-index-core",
    "haystack": "haystack-ai",
}


def _refused(tmp_path: Path, *overrides: str) -> str:
    with pytest.raises(ConfigError) as caught:
        heta_eval.evaluate(
            overrides=[f"paths.root={tmp_path}", "tracking=none", "runner.progress=off", *overrides]
        )
    message = str(caught.value)
    assert "\n" not in message, message
    assert not list(tmp_path.rglob("report.json"))  # refused before any work
    return message


def _without(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    """importlib.metadata says `missing` is not installed."""
    real: Callable[[str], str] = metadata.version

    def version(name: str) -> str:
        if name == missing:
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_missing_extra_names_the_pip_command(
    framework: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without(monkeypatch, FRAMEWORKS[framework])
    message = _refused(tmp_path, f"recipe={framework}")
    assert message.startswith("recipe: "), message
    assert f"needs {FRAMEWORKS[framework]} (not installed)" in message
    assert message.endswith(f"pip install 'heta-eval[{framework}]'"), message


def test_a_missing_package_of_an_example_factory_names_the_key_and_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without(monkeypatch, "rank-bm25")
    message = _refused(tmp_path, "recipe=langchain")
    assert "recipe.factory (heta_eval.bridges.langchain.examples.bm25_retriever)" in message
    assert message.endswith("needs rank-bm25 (not installed): pip install 'heta-eval[langchain]'")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_factory_of_the_wrong_type_is_named_with_what_was_expected(
    framework: str, tmp_path: Path
) -> None:
    target = "tests.unit.bridges.factories.returns_a_list"
    # `~` drops the shipped factory's arguments; `+` adds the new factory in its place.
    replaced = ["~recipe.factory", f"+recipe.factory={{_target_: {target}}}"]
    message = _refused(tmp_path, f"recipe={framework}", *replaced)
    assert f"recipe.factory: {target} returned builtins.list;" in message, message
    expected = {
        "langchain": "a langchain_core.retrievers.BaseRetriever or a chain",
        "llamaindex": "a llama_index.core BaseRetriever or BaseQueryEngine",
        "haystack": "a haystack.Pipeline",
    }
    assert expected[framework] in message


def test_a_pipeline_without_the_results_component_names_documents_from(tmp_path: Path) -> None:
    target = "tests.unit.bridges.factories.haystack_without_retriever"
    replaced = ["~recipe.factory", f"+recipe.factory={{_target_: {target}}}"]
    message = _refused(tmp_path, "recipe=haystack", *replaced)
    assert "recipe.documents_from: the pipeline gives no results" in message
    assert "no component 'retriever' (it has ['bm25'])" in message
    # Named, it is accepted.
    recipe = heta_eval.run.assembly.assemble(
        heta_eval.config.compose.compose_config(
            [
                f"paths.root={tmp_path}",
                "recipe=haystack",
                *replaced,
                "recipe.documents_from=bm25",
            ]
        )
    ).recipe
    assert recipe.kind == "pipeline" and not recipe.answers


def test_an_argument_the_factory_does_not_take_is_named_with_the_nearest(
    tmp_path: Path,
) -> None:
    message = _refused(tmp_path, "recipe=langchain", "+recipe.factory.chunk_sise=256")
    assert message.startswith("recipe: "), message
    assert "recipe.factory.chunk_sise:" in message
    assert "did you mean recipe.factory.chunk_size?" in message
    message = _refused(tmp_path, "recipe=haystack", "recipe.factory.algorithm=BM26")
    assert "recipe.factory.algorithm: 'BM26' is not accepted" in message


def test_a_factory_that_fails_on_the_probe_says_so(tmp_path: Path) -> None:
    message = _refused(tmp_path, "recipe=langchain", "recipe.factory.chunk_overlap=2000")
    probe = "failed on a one-document probe: ValueError: Got a larger chunk overlap (2000)"
    assert f"recipe.factory (heta_eval.bridges.langchain.examples.bm25_retriever) {probe}" in (
        message
    ), message


def test_llamaindex_bm25_without_its_package_says_why_it_is_not_in_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without(monkeypatch, "llama-index-retrievers-bm25")
    bm25 = "heta_eval.bridges.llamaindex.examples.bm25_retriever"
    message = _refused(tmp_path, "recipe=llamaindex", f"recipe.factory._target_={bm25}")
    assert f"recipe.factory ({bm25}): LlamaIndex's BM25 example needs " in message
    assert "pip install llama-index-retrievers-bm25 (not part of heta-eval[llamaindex]: it " in (
        message
    )
