"""Component arguments checked against what the library accepts, before any work (issue 23,
item 12): a stemmer language PyStemmer does not know, a stopword list bm25s does not have, a
string where a number is expected. The error names the key, the value and the allowed values;
nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import nothing_written
from .processes import run_cli


@pytest.mark.parametrize(
    ("override", "expected"),
    [
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
    ],
)
def test_arguments_the_library_refuses_exit_2_naming_key_value_and_allowed_values(
    tmp_path: Path, override: str, expected: str
) -> None:
    root = tmp_path / "outputs"
    done = run_cli(root, tmp_path, override, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr and "'<' not supported" not in done.stderr
    assert nothing_written(root)


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
