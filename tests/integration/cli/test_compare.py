"""`heta-eval-compare`'s command line: one-line errors, the baseline chosen by index, path or
label, a run compared with itself, all pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heta_eval.cli.compare import main

from ...compare_helpers import binary_pair


def test_cli_errors_are_one_line_and_the_baseline_can_be_chosen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = binary_pair()
    first = a.write_json(tmp_path / "a" / "report.json")
    b.write_json(tmp_path / "b" / "report.json")

    def fails(*args: str) -> str:
        with pytest.raises(SystemExit) as exited:
            main([*args, "--out", str(tmp_path / "out")])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        return err

    assert "no such report: nowhere.json" in fails("nowhere.json", str(first))
    assert "need at least two runs to compare, got 1" in fails(str(first))
    assert "unknown metric 'recall@5'" in fails(
        str(first), str(tmp_path / "b"), "--metrics", "recall@5"
    )
    assert "--all-pairs tests every pair; it takes no --baseline" in fails(
        str(first), str(tmp_path / "b"), "--all-pairs", "--baseline", "1"
    )
    assert "--min-overlap must be within [0, 1], got 1.5" in fails(
        str(first), str(tmp_path / "b"), "--min-overlap", "1.5"
    )
    assert "baseline 'recipe=bm25' is none of the runs ('a (a)', 'b (b)')" in fails(
        str(first), str(tmp_path / "b"), "--baseline", "recipe=bm25"
    )
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    assert "no MLflow store at" in fails(str(first), "0" * 32, "--tracking-uri", missing)

    def succeeds(*args: str) -> tuple[str, dict]:
        with pytest.raises(SystemExit) as exited:
            main([*args, "--out", str(tmp_path / "out"), "--resamples", "500"])
        assert exited.value.code == 0
        return capsys.readouterr().out, json.loads(
            (tmp_path / "out" / "comparison.json").read_text()
        )

    out, numbers = succeeds(str(tmp_path / "a"), str(tmp_path / "b"))
    assert "a (a) (baseline)" in out and "(McN)" in out  # McNemar, abbreviated to fit 120 columns
    assert f"html: {tmp_path / 'out' / 'comparison.html'}" in out
    assert numbers["baseline"] == "a (a)" and numbers["resamples"] == 500
    for baseline in ("1", str(tmp_path / "b"), "b (b)"):
        _, numbers = succeeds(str(first), str(tmp_path / "b"), "--baseline", baseline)
        assert numbers["baseline"] == "b (b)"
        assert [r["label"] for r in numbers["runs"]] == ["a (a)", "b (b)"]
    _, numbers = succeeds(str(first), str(first), "--metrics", "hit_at_1")
    assert [r["label"] for r in numbers["runs"]] == ["a (a) #1", "a (a) #2"]
    (test,) = numbers["rows"][0]["tests"]
    assert numbers["metrics"] == ["bm25.hit@1"] and test["p_value"] == 1.0
    assert test["difference"] == 0 and test["ties"] == 28 and test["excluded"] == 1
    _, numbers = succeeds(str(first), str(tmp_path / "b"), "--all-pairs")
    assert numbers["all_pairs"] and numbers["baseline"] is None
