"""Tuning and test parts of a benchmark (`tuning.part`): BEIR's own tuning split on SciFact,
a seeded held-out share of the queries otherwise, and the `tuning` config validated."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from heta_eval.benchmarks import BeirBenchmark, SampleBenchmark
from heta_eval.benchmarks.splits import HeldOutCases, TuningSettings, tuning_part, tuning_view
from heta_eval.config.compose import compose_config
from heta_eval.config.resolve import ConfigError
from heta_eval.run.assembly import assemble
from tests.conftest import load_benchmark


def _judged(path: Path) -> set[str]:
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))[1:]
    return {row[0] for row in rows if row}


def _parts(bench: object, tmp_path: Path, settings: dict) -> tuple[tuple, tuple]:
    tune = tuning_view(bench, TuningSettings(part="tune", **settings))  # type: ignore[arg-type]
    test = tuning_view(bench, TuningSettings(part="test", **settings))  # type: ignore[arg-type]
    return load_benchmark(tune, tmp_path / "tune"), load_benchmark(test, tmp_path / "test")


def test_beir_tunes_on_scifact_train_qrels_and_tests_on_its_test_qrels(
    scifact_dir: Path, tmp_path: Path
) -> None:
    bench = BeirBenchmark("scifact", data_root=scifact_dir)
    assert bench.tuning_split() == "train"
    tune_view = tuning_view(bench, TuningSettings(part="tune"))
    test_view = tuning_view(bench, TuningSettings(part="test"))
    assert tune_view.manifest.key == "beir-scifact/1.0/train"
    assert test_view.manifest.key == "beir-scifact/1.0/test"
    assert tune_view.manifest.metadata["tuning"].startswith("the 'train' qrels; the 'test'")
    assert test_view.manifest.metadata["tuning"].startswith("the 'test' qrels, never used")
    assert tune_view.manifest.metadata["tuning_part"] == "tune"
    assert test_view.manifest.metadata["tuning_part"] == "test"

    (docs, tune_cases, _), (test_docs, test_cases, _) = _parts(bench, tmp_path, {})
    tune_ids = {c.case_id for c in tune_cases}
    test_ids = {c.case_id for c in test_cases}
    lines = (scifact_dir / "queries.jsonl").read_text().splitlines()
    queries = {json.loads(line)["_id"] for line in lines if line.strip()}
    assert tune_ids == _judged(scifact_dir / "qrels" / "train.tsv") & queries
    assert test_ids == _judged(scifact_dir / "qrels" / "test.tsv")
    assert len(test_ids) == 300 and len(tune_ids) > 700
    assert not tune_ids & test_ids  # the test queries never tune
    assert len(docs) == len(test_docs) == 5183  # the same corpus


def test_a_beir_dataset_with_only_test_qrels_holds_out_a_share_of_its_queries(
    scifact_dir: Path, tmp_path: Path
) -> None:
    only_test = tmp_path / "only_test"
    (only_test / "qrels").mkdir(parents=True)
    for member in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (only_test / member).symlink_to(scifact_dir / member)
    bench = BeirBenchmark("scifact", data_root=only_test)
    assert bench.tuning_split() is None
    view = tuning_view(bench, TuningSettings(part="tune", holdout_fraction=0.2, seed=3))
    assert isinstance(view, HeldOutCases)
    assert view.manifest.key == "beir-scifact/1.0/test-tuning"
    assert "a seeded 20% of the 'test' queries, seed 3" in view.manifest.metadata["tuning"]
    assert view.default_top_k == 100 and [e.name for e in view.evaluators()] == [
        e.name for e in bench.evaluators()
    ]


def test_held_out_parts_are_disjoint_complete_and_seeded(tmp_path: Path) -> None:
    bench = SampleBenchmark()
    (_, tune, tune_units), (_, test, test_units) = _parts(
        bench, tmp_path, {"holdout_fraction": 0.25, "seed": 0}
    )
    _, every, _ = load_benchmark(SampleBenchmark(), tmp_path / "all")
    tune_ids, test_ids = {c.case_id for c in tune}, {c.case_id for c in test}
    assert len(tune_ids) == 12 and len(test_ids) == 36
    assert not tune_ids & test_ids and tune_ids | test_ids == {c.case_id for c in every}
    assert [set(u.case_ids) for u in tune_units] == [tune_ids]
    assert [set(u.case_ids) for u in test_units] == [test_ids]

    (_, again, _), _ = _parts(SampleBenchmark(), tmp_path / "again", {"holdout_fraction": 0.25})
    assert {c.case_id for c in again} == tune_ids  # the same seed: the same part
    (_, other, _), _ = _parts(bench, tmp_path / "seed", {"holdout_fraction": 0.25, "seed": 1})
    assert {c.case_id for c in other} != tune_ids


def test_held_out_parts_keep_each_units_cases_in_that_unit(tmp_path: Path) -> None:
    bench = SampleBenchmark(shape="units")
    _, _, units = load_benchmark(bench, tmp_path / "all")
    (_, tune, tune_units), (_, test, test_units) = _parts(bench, tmp_path, {"seed": 5})
    unit_of = {case: u.unit_id for u in units for case in u.case_ids}
    for part_units, cases in ((tune_units, tune), (test_units, test)):
        assert sorted(c for u in part_units for c in u.case_ids) == sorted(c.case_id for c in cases)
        assert all(unit_of[c] == u.unit_id for u in part_units for c in u.case_ids)


def test_held_out_parts_keep_the_benchmarks_conventions_and_fetching_policy() -> None:
    bench = SampleBenchmark()
    bench.allow_private_urls = frozenset({"docs.internal"})
    view = tuning_view(bench, TuningSettings(part="test"))
    assert isinstance(view, HeldOutCases)
    assert view.allow_private_urls == frozenset({"docs.internal"})
    assert (view.slice_by, view.default_top_k) == (bench.slice_by, bench.default_top_k)


def test_tuning_part_sizes() -> None:
    ids = [f"q{i}" for i in range(10)]
    assert len(tuning_part(ids, 0.5, 0)) == 5
    assert len(tuning_part(ids, 0.01, 0)) == 1  # at least one case tunes
    assert len(tuning_part(ids, 0.99, 0)) == 9  # and at least one is held out
    with pytest.raises(ValueError, match="1 case"):
        tuning_part(["q1"], 0.5, 0)


def test_the_tuning_config_is_validated_before_any_work(tmp_path: Path) -> None:
    base = ["hparams_search=bm25_optuna", f"paths.root={tmp_path}", "tracking=none"]
    components = assemble(compose_config(base))
    assert components.benchmark.manifest.split == "test-tuning"
    tested = assemble(compose_config([*base, "tuning.part=test"]))
    assert tested.benchmark.manifest.split == "test-heldout"
    assert tested.config_hash != components.config_hash  # never reused for each other
    with pytest.raises(ConfigError, match=r"tuning.holdout_fraction: Input should be less than 1"):
        assemble(compose_config([*base, "tuning.holdout_fraction=1.5"]))
    with pytest.raises(ConfigError, match=r"tuning.part: Input should be 'tune' or 'test'"):
        assemble(compose_config([*base, "tuning.part=train"]))
