"""Run labels: the overrides that differ, read from what Hydra saved beside each report,
with secrets masked everywhere the comparison is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval.cli.compare import main
from heta_eval.compare import load_reports
from heta_eval.compare.labels import differing_labels, split_overrides

from ...compare_helpers import binary_pair


def test_labels_name_the_overrides_that_differ() -> None:
    assert split_overrides("recipe=bm25 runner.query_modes=[bm25, fusion]  x='a b'") == [
        "recipe=bm25",
        "runner.query_modes=[bm25, fusion]",
        "x='a b'",
    ]
    # Where things go (paths, tracking, hydra) is never what differs.
    assert differing_labels(
        [["recipe=bm25", "paths.root=/a"], ["recipe=bm25_fusion", "paths.root=/b"]], [{}, {}]
    ) == ["recipe=bm25", "recipe=bm25_fusion"]
    # A run without the override shows its config value (a group by its name).
    assert differing_labels(
        [["recipe=bm25_fusion", "recipe.chunk_size=64"], []],
        [
            {"recipe.name": "bm25_fusion", "recipe.chunk_size": "64"},
            {"recipe.name": "bm25", "recipe.chunk_size": "null"},
        ],
    ) == [
        "recipe=bm25_fusion chunk_size=64",
        "recipe=bm25 chunk_size=null",
    ]
    # Same overrides (or none): the result-shaping config values that differ.
    assert differing_labels(
        [[], []],
        [
            {"recipe.indexes.bm25.k1": "1.2", "paths.root": "/a", "recipe.description": "x"},
            {"recipe.indexes.bm25.k1": "0.5", "paths.root": "/b", "recipe.description": "y"},
        ],
    ) == ["k1=1.2", "k1=0.5"]
    # Names first, then at most MAX_CONFIG_KEYS keys.
    configs = [
        {"recipe.indexes.a": v, "recipe.indexes.b": v, "recipe.indexes.c": v, "recipe.name": n}
        for v, n in (("1", "bm25"), ("2", "bm25_fusion"))
    ]
    assert differing_labels([[], []], configs) == [
        "recipe=bm25 a=1 b=1 +1 more",
        "recipe=bm25_fusion a=2 b=2 +1 more",
    ]
    assert differing_labels([["recipe=bm25"], ["recipe=bm25"]], [{}, {}]) is None


def test_labels_come_from_the_saved_overrides_and_secrets_stay_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = binary_pair()
    for name, report, overrides in (
        ("a", a, ["recipe=bm25", "+recipe.metadata.api_key=sk-a-secret", "paths.root=/x"]),
        ("b", b, ["recipe=bm25_fusion", "+recipe.metadata.api_key=sk-b-secret", "paths.root=/y"]),
    ):
        report.write_json(tmp_path / name / "report.json")
        (tmp_path / name / ".hydra").mkdir()
        (tmp_path / name / ".hydra" / "overrides.yaml").write_text(
            "".join(f"- {o}\n" for o in overrides)
        )
    runs = load_reports([str(tmp_path / "a"), str(tmp_path / "b")])
    assert [r.label for r in runs] == ["recipe=bm25", "recipe=bm25_fusion"]
    assert runs[0].overrides[1] == "+recipe.metadata.api_key=***"
    with pytest.raises(SystemExit) as exited:
        main([str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "out")])
    assert exited.value.code == 0
    printed = capsys.readouterr().out
    assert "baseline recipe=bm25" in printed
    for text in (printed, *(p.read_text() for p in (tmp_path / "out").iterdir())):
        assert "secret" not in text
