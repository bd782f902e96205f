"""Numbers a component was not made for (issue 36, items 1 and 15): a finite but absurd
argument (`k1=1e100` retrieved nothing and every metric was 0.0000, exit 0), or `true` where
a number is expected (taken as 1), is refused before any work with the allowed range, naming
the key; nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval.config.ranges import Range
from heta_eval.evaluators import NDCGAtK
from heta_eval.kb import BM25Index, FixedSizeChunker, ReciprocalRankFusion
from heta_eval.kb.answering import LLMAnswerer

from ..conftest import InProcessCli
from .conftest import nothing_written


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            "recipe.indexes.bm25.k1=1e100",
            "recipe.indexes.bm25.k1: 1e+100 is not accepted by heta_eval.kb.BM25Index: "
            "out of range; allowed: [0, 100]",
        ),
        (
            "recipe.indexes.bm25.b=1.5",
            "recipe.indexes.bm25.b: 1.5 is not accepted by heta_eval.kb.BM25Index: "
            "out of range; allowed: [0, 1]",
        ),
        (
            "+recipe.indexes.bm25.delta=1e300",
            "recipe.indexes.bm25.delta: 1e+300 is not accepted by heta_eval.kb.BM25Index: "
            "out of range; allowed: [0, 10]",
        ),
        (
            "recipe.chunk_size=100000000000",
            "recipe.chunk_size: Input should be less than or equal to 10000000",
        ),
        ("runner.top_k=100000000000", "runner.top_k: Input should be less than or equal to 100000"),
        (
            "recipe.indexes.bm25.k1=true",
            "recipe.indexes.bm25.k1: true is not accepted by heta_eval.kb.BM25Index "
            "(expected float, a number, not true or false)",
        ),
        (
            "+recipe.answerer={_target_:heta_eval.kb.LLMAnswerer,base_url:'http://127.0.0.1:9',"
            "model:m,temperature:7}",
            "recipe.answerer.temperature: 7 is not accepted by heta_eval.kb.LLMAnswerer: "
            "out of range; allowed: [0, 2]",
        ),
    ],
)
def test_an_argument_out_of_its_range_exits_2_with_the_range(
    cli: InProcessCli, tmp_path: Path, override: str, expected: str
) -> None:
    done = cli(override)
    assert done.returncode == 2, done.stdout + done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
    assert nothing_written(tmp_path / "outputs")


def test_an_evaluator_depth_beyond_the_bound_is_refused(cli: InProcessCli, tmp_path: Path) -> None:
    done = cli("evaluator=retrieval", "evaluator.extra.0.ks=[10,1000000000]")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "k must be a number within [1, 100000], got 1000000000" in done.stderr
    assert nothing_written(tmp_path / "outputs")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: BM25Index(k1=1e100), r"k1 must be a number within \[0, 100\], got 1e\+100"),
        (lambda: BM25Index(k1=True), r"k1 must be a number within \[0, 100\], got True"),
        (lambda: FixedSizeChunker(chunk_size=10**12), r"chunk_size must be a number within"),
        (lambda: ReciprocalRankFusion(modes=["a", "b"], k=1e30), r"k must be a number within"),
        (lambda: NDCGAtK(k=0), r"k must be a number within \[1, 100000\], got 0"),
        (
            lambda: LLMAnswerer(base_url="http://127.0.0.1:9", model="m", temperature=3.0),
            r"temperature must be a number within \[0, 2\], got 3.0",
        ),
    ],
)
def test_components_made_in_python_refuse_the_same_numbers(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        make()


def test_a_range_says_what_it_allows() -> None:
    assert str(Range(0, 1)) == "[0, 1]"
    assert str(Range(0, 1, low_open=True)) == "(0, 1]"
    assert str(Range(0)) == ">= 0"
    assert Range(0, 100).contains(100) and not Range(0, 100).contains(100.5)
    assert not Range(0, 100).contains(True) and not Range(0, 100).contains("1")
