"""A LlamaIndex query engine over LlamaIndex's MockLLM, run on UDA: its answers are scored
by UDA's own answer scorers and its source nodes by UDA's evidence metrics (pages mapped
back from the nodes' metadata)."""

from __future__ import annotations

from pathlib import Path

import pytest

import heta_eval

from ...conftest import SHARED
from ...unit.bridges.factories import require_frameworks

require_frameworks("llama_index.core")

pytestmark = pytest.mark.slow

UDA = SHARED / "datasets" / "uda"
ENGINE = "heta_eval.bridges.llamaindex.examples.keyword_query_engine"


@pytest.fixture(scope="module")
def uda_root() -> Path:
    if not (UDA / "qa").is_dir():
        pytest.skip(f"UDA not found at {UDA}")
    return UDA


def _run(root: Path, uda: Path, subset: str) -> heta_eval.EvaluationReport:
    return heta_eval.evaluate(
        overrides=[
            f"paths.root={root}",
            "benchmark=uda",
            f"benchmark.subset={subset}",
            f"benchmark.data_root={uda}",
            "recipe=llamaindex",
            f"recipe.factory._target_={ENGINE}",
            "recipe.factory.k=4",
            "runner.limit=4",
            "tracking=none",
            "runner.progress=off",
        ]
    )


@pytest.mark.parametrize(
    ("subset", "answer_metric"), [("nq", "nq_answer_f1"), ("fin", "finqa_exact_match")]
)
def test_a_query_engine_is_scored_by_udas_scorers(
    subset: str, answer_metric: str, uda_root: Path, tmp_path: Path
) -> None:
    report = _run(tmp_path, uda_root, subset)
    assert len(report.case_results) == 4 and not report.failed_cases
    assert report.recipe_manifest["answerer"] == "query_engine"
    for case in report.case_results:
        assert case.score(answer_metric) is not None, case.scores
        if not case.retrieved:  # no chunk holds a keyword of the query: LlamaIndex says so
            assert case.answer == "Empty Response"
            continue
        # MockLLM answers with its prompt: the query and the chunks it was given.
        assert case.answer and case.query in case.answer
        assert all(i.page_index is not None for i in case.retrieved)
    assert sum(bool(case.retrieved) for case in report.case_results) >= 3
    assert 0 <= report.score_summary[f"llamaindex.{answer_metric}"] <= 1
    assert 0 < report.score_summary["llamaindex.uda_evidence_match@5"] <= 1
    if subset == "fin":  # fin's evidence is pages: matched by the nodes' page_index
        assert report.score_summary["llamaindex.evidence_recall@5"] > 0
