"""Recipe components' arguments, `runner.seed` and the API keys of a recipe's endpoints are
checked before any work (issue 23, item 12): an unknown or out-of-range argument, a stemmer
language PyStemmer does not know, a stopword list bm25s does not have, a string where a
number is expected, a non-finite number, a parser target that is not a parser, a key not in
the environment. The error names the key, the value and the allowed values; nothing is
written."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import InProcessCli
from .conftest import nothing_written


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("+recipe.chunker.bogus=1", "recipe.chunker.bogus: heta_eval.kb.FixedSizeChunker takes"),
        ("+recipe.indexes.bm25.k=2", "did you mean recipe.indexes.bm25.k1?"),
        (
            "recipe.indexes.bm25.k1=-1",
            "recipe.indexes.bm25.k1: -1 is not accepted by heta_eval.kb.BM25Index: out of range",
        ),
        (
            "recipe.indexes.bm25.method=nonsense",
            "recipe.indexes.bm25.method: 'nonsense' is not accepted",
        ),
        ("runner.seed=-1", "runner.seed: Input should be greater than or equal to 0"),
        (
            "recipe.indexes.bm25.stemmer=klingon",
            "recipe.indexes.bm25.stemmer: 'klingon' is not accepted by heta_eval.kb.BM25Index: "
            "'klingon' is not a stemmer language PyStemmer knows; allowed: arabic, ",
        ),
        (
            "recipe.indexes.bm25.stopwords=xx",
            "recipe.indexes.bm25.stopwords: 'xx' is not accepted by heta_eval.kb.BM25Index: "
            "'xx' is not a stopword list bm25s has; allowed: english, en, ",
        ),
        (
            "recipe.indexes.bm25.k1=abc",
            "recipe.indexes.bm25.k1: 'abc' is not accepted by heta_eval.kb.BM25Index "
            "(expected float): Input should be a valid number",
        ),
        (
            "recipe.indexes.bm25.k1=nan",
            "recipe.indexes.bm25.k1: a finite number is required (got nan)",
        ),
        (
            "recipe.indexes.bm25.k1=1e999",
            "recipe.indexes.bm25.k1: a finite number is required (got inf)",
        ),
        (
            "recipe.indexes.bm25.k1=-inf",
            "recipe.indexes.bm25.k1: a finite number is required (got -inf)",
        ),
        (
            # Inside a list or a mapping of an argument, before anything is created.
            "evaluator.extra=[{_target_:my.Metric,weights:{a:[1,nan]}}]",
            "evaluator.extra[0].weights.a[1]: a finite number is required (got nan)",
        ),
    ],
)
def test_bad_component_arguments_exit_2_before_any_work(
    cli: InProcessCli, tmp_path: Path, override: str, expected: str
) -> None:
    done = cli(override)
    assert done.returncode == 2, done.stdout + done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr and "'<' not supported" not in done.stderr
    assert nothing_written(tmp_path / "outputs")


@pytest.mark.parametrize(
    "override",
    [
        "recipe.parser={_target_:heta_eval.kb.chunking.FixedSizeChunker}",
        "+recipe.parser.parsers={txt:{_target_:heta_eval.kb.chunking.FixedSizeChunker}}",
    ],
    ids=["parser", "parser-of-a-type"],
)
def test_a_parser_target_that_is_not_a_parser_is_refused_up_front(
    cli: InProcessCli, tmp_path: Path, override: str
) -> None:
    done = cli(override)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "recipe.parser" in done.stderr
    assert "FixedSizeChunker is not a parser" in done.stderr
    assert "parse(source, data)" in done.stderr
    assert nothing_written(tmp_path / "outputs")


def test_the_allowed_values_are_the_libraries_own() -> None:
    """Every stemmer language and stopword list we allow, the libraries accept."""
    import Stemmer
    from bm25s.tokenization import Tokenizer

    from heta_eval.kb.index.bm25 import STOPWORD_LANGUAGES, BM25Index, stemmer_languages

    assert stemmer_languages() == sorted(Stemmer.algorithms())
    for language in STOPWORD_LANGUAGES:
        assert Tokenizer(stopwords=language).stopwords, language
    with pytest.raises(ValueError, match="not recognized"):
        Tokenizer(stopwords="xx")  # what bm25s itself does with an unknown list
    BM25Index(stemmer="french", stopwords="fr")  # accepted
    with pytest.raises(ValueError, match="'klingon' is not a stemmer language"):
        BM25Index(stemmer="klingon")


def test_an_endpoint_without_its_key_exits_2_and_offline_recipes_need_none(
    cli: InProcessCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "")  # unset for the run, whatever the machine has
    done = cli("recipe=bm25_llm", "evaluator=with_answers")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "recipe.answerer.api_key_env: environment variable OPENAI_API_KEY is not set" in (
        done.stderr
    )
    assert nothing_written(tmp_path / "outputs")
    # A recipe without endpoints, an endpoint without authentication: no key needed.
    for args in (
        ("evaluator=with_answers",),
        ("recipe=bm25_llm", "recipe.answerer.api_key_env=null", "runner.dry_run=true"),
    ):
        ok = cli("runner.limit=2", "tracking=none", *args)
        assert ok.returncode == 0, ok.stdout + ok.stderr
