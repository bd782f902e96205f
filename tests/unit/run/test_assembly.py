"""Every config option composes with Hydra and assembles; bad values fail with named keys."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from heta_eval.benchmarks.sample import SAMPLE_DATA
from heta_eval.config.resolve import ConfigError
from heta_eval.kb import KnowledgeRecipe
from heta_eval.protocols import RecipeLike
from heta_eval.run.assembly import assemble, config_hash
from heta_eval.tracking import MlflowTracker, NullTracker
from tests.conftest import REPO

CONF = REPO / "conf"


@pytest.fixture
def composer(tmp_path: Path) -> Iterator:
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):

        def make(*overrides: str) -> DictConfig:
            cfg = compose(
                "config",
                overrides=[
                    f"paths.root={tmp_path}",
                    f"runner.output_dir={tmp_path / 'run'}",
                    *overrides,
                ],
                return_hydra_config=True,
            )
            HydraConfig.instance().set_config(cfg)
            return cfg

        yield make
    GlobalHydra.instance().clear()


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


JSONL_FILES = [
    f"benchmark.documents={SAMPLE_DATA / 'documents.jsonl'}",
    f"benchmark.cases={SAMPLE_DATA / 'cases.jsonl'}",
]


@pytest.mark.parametrize("option", _options("benchmark"))
def test_every_benchmark_option_assembles(composer, option: str) -> None:
    extra = JSONL_FILES if option == "jsonl" else []
    components = assemble(composer(f"benchmark={option}", *extra))
    assert components.benchmark.manifest.name


@pytest.mark.parametrize("option", _options("recipe"))
def test_every_recipe_option_assembles(
    composer, option: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-only-checked-for-presence")  # endpoint recipes
    if option.startswith("heta_") and importlib.util.find_spec("heta_framework") is None:
        pytest.skip("the Heta bridge needs the 'heta' extra")
    framework = {"langchain": "langchain_core", "llamaindex": "llama_index", "haystack": "haystack"}
    if option in framework and importlib.util.find_spec(framework[option]) is None:
        pytest.skip(f"recipe={option} needs the '{option}' extra")
    extra = []
    if option == "replay":  # scores a file produced elsewhere: it needs one
        (tmp_path / "run.trec").write_text("q1 Q0 d1 1 1.5 elsewhere\n")
        extra = [f"recipe.run={tmp_path / 'run.trec'}"]
    recipe = assemble(composer(f"recipe={option}", *extra)).recipe
    assert isinstance(recipe, RecipeLike) and recipe.query_modes
    if option.startswith(("bm25", "dense", "hybrid")):
        assert isinstance(recipe, KnowledgeRecipe)


@pytest.mark.parametrize("option", _options("evaluator"))
def test_every_evaluator_option_assembles(
    composer, option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-only-checked-for-presence")  # the LLM judge
    assert assemble(composer(f"evaluator={option}")).evaluators


@pytest.mark.parametrize("option", _options("experiment"))
def test_every_experiment_assembles(composer, option: str) -> None:
    assert assemble(composer(f"experiment={option}")).recipe


def test_defaults_and_groups(composer, tmp_path: Path) -> None:
    components = assemble(composer())
    assert components.benchmark.manifest.name == "sample"
    assert components.recipe.name == "bm25" and components.recipe.chunk_size is None
    assert isinstance(components.tracker, MlflowTracker)
    assert components.tracker.uri == f"sqlite:///{tmp_path.resolve() / 'mlflow.db'}"
    assert components.settings.top_k is None and components.settings.store_dir == tmp_path / "store"
    assert isinstance(assemble(composer("tracking=none")).tracker, NullTracker)


def test_recipe_chunk_size_reaches_the_chunker(composer) -> None:
    recipe = assemble(composer("recipe.chunk_size=128", "recipe.chunk_overlap=16")).recipe
    assert recipe.chunker["chunk_size"] == 128 and recipe.chunker["chunk_overlap"] == 16
    chunker = recipe.create_chunker()
    assert (chunker.chunk_size, chunker.chunk_overlap) == (128, 16)


@pytest.mark.slow
def test_evaluator_groups_extend_or_replace(composer) -> None:
    default = [e.name for e in assemble(composer()).evaluators]
    extended = [e.name for e in assemble(composer("evaluator=with_answers")).evaluators]
    replaced = [e.name for e in assemble(composer("evaluator=retrieval")).evaluators]
    assert extended == [*default, "answer_exact_match", "answer_f1", "answer_contains"]
    assert replaced == [
        *(
            f"{m}@{k}"
            for m in ("ndcg", "recall", "map", "mrr", "precision", "success")
            for k in (10, 100)
        ),
        "r_precision",
    ]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["runner.limit=0"], "runner.limit: Input should be greater than 0"),
        (
            ["runner.query_batch_size=0"],
            "runner.query_batch_size: Input should be greater than or equal to 1 (got 0)",
        ),
        (["runner.query_batch_size=2.5"], "runner.query_batch_size: Input should be a valid"),
        (["runner.query_batch_size=true"], "runner.query_batch_size: Input should be a valid"),
        (["recipe.chunk_size=0"], "recipe.chunk_size: Input should be greater than 0"),
        (["+recipe.chunk_sise=8"], "recipe.chunk_sise: Extra inputs are not permitted"),
        (
            ["benchmark._target_=heta_eval.benchmarks.SampleBenchmrk"],
            "benchmark: _target_ 'heta_eval.benchmarks.SampleBenchmrk' not found in module "
            "heta_eval.benchmarks; did you mean heta_eval.benchmarks.SampleBenchmark",
        ),
        (["benchmark.shape=pyramid"], "shape must be 'corpus' or 'units'"),
        (["+evaluator.typo=1"], "evaluator: unknown keys ['typo']"),
        (
            ["recipe.reranker={_target_:heta_eval.kb.ExtractiveAnswerer}"],
            "recipe.reranker: heta_eval.kb.answering.ExtractiveAnswerer lacks ['rerank'] of the "
            "protocol it must follow (heta_eval.kb.rerank.Reranker; subclass "
            "heta_eval.kb.rerank.BaseReranker for the defaults)",
        ),
        (
            ["tracking=none", "tracking._target_=heta_eval.benchmarks.SampleBenchmark"],
            "tracking: heta_eval.benchmarks.sample.SampleBenchmark lacks ['connect', ",
        ),
    ],
)
def test_bad_configs_name_the_key(composer, overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        assemble(composer(*overrides))
    assert message in str(info.value)


def test_secrets_are_masked_everywhere_and_do_not_move_the_hash(composer) -> None:
    one = assemble(composer("+recipe.metadata.api_key=sk-very-secret"))
    other = assemble(composer("+recipe.metadata.api_key=sk-another-secret"))
    assert one.resolved["recipe"]["metadata"]["api_key"] == "***"
    assert one.recipe.manifest()["metadata"]["api_key"] == "***"
    assert "sk-very-secret" not in str(one.resolved)
    assert one.config_hash == other.config_hash


def test_config_hash_follows_what_changes_results(composer, tmp_path: Path) -> None:
    base = assemble(composer()).config_hash
    assert assemble(composer("recipe.chunk_size=64")).config_hash != base
    assert assemble(composer("runner.top_k=5")).config_hash != base
    assert assemble(composer(f"runner.store_dir={tmp_path / 'elsewhere'}")).config_hash == base
    # Batches give each query what it gets alone: how many go together changes no result.
    assert assemble(composer("runner.query_batch_size=1")).config_hash == base
    assert config_hash({"recipe": {"a": 1}, "runner": {}}) == config_hash(
        {"runner": {}, "recipe": {"a": 1}}
    )


def test_extra_evaluators_the_benchmark_already_has_are_not_doubled(composer) -> None:
    names = [
        e.name
        for e in assemble(composer("benchmark=multihop_rag", "evaluator=with_answers")).evaluators
    ]
    assert names.count("answer_contains") == 1 and "answer_exact_match" in names
