"""`recipe=replay`: rankings and answers produced elsewhere, scored like any recipe's.

A run's exported predictions replay to the same scores; a TREC run file of SciFact replays to
trec_eval's (pytrec_eval's) nDCG@10 on that file and compares with a `recipe=bm25` run;
every bad line is named `FILE:LINE` before any work; a changed file is a new run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import heta_eval
from heta_eval import EvaluationReport
from heta_eval.config.resolve import ConfigError
from heta_eval.run.runner import BenchmarkError

from ...cli_in_process import call_cli_once
from ...conftest import InProcessCli
from ..conftest import SharedRun
from ..runs import report_path


def _evaluate(root: Path, *overrides: str) -> EvaluationReport:
    base = [f"paths.root={root}", "tracking=none", "runner.progress=off"]
    return heta_eval.evaluate(overrides=[*base, *overrides])


def _trec_lines(report: EvaluationReport, tag: str = "heta") -> list[str]:
    lines = []
    for result in report.case_results:
        for rank, item in enumerate(result.retrieved, start=1):
            lines.append(f"{result.case_id} Q0 {item.document_id} {rank} {item.score!r} {tag}")
    return lines


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, EvaluationReport, Path]:
    """The sample benchmark with BM25 and extractive answers, and its exported predictions
    (written by the console script, as a user runs it)."""
    root = tmp_path_factory.mktemp("replay-sample")
    report = _evaluate(root, "recipe=bm25_extractive", "evaluator=with_answers")
    predictions = root / "predictions.jsonl"
    proc = call_cli_once(
        "heta-eval-export-predictions",
        [str(report.run.output_dir), "-o", str(predictions)],
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"48 predictions of query mode 'bm25' written to {predictions}" in proc.stdout
    return root, report, predictions


def _scores(report: EvaluationReport) -> dict[str, dict[str, float | None]]:
    return {r.case_id: {s.name: s.value for s in r.scores} for r in report.case_results}


def test_exported_predictions_replay_to_the_same_scores(sample, tmp_path: Path) -> None:
    _, original, predictions = sample
    first = json.loads(predictions.read_text().splitlines()[0])
    keys = {"case_id", "unit_id", "query", "answer", "retrieved", "knowledge_base_items"}
    assert set(first) == keys
    assert first["knowledge_base_items"] == original.knowledge_base_manifests[0].counts["chunks"]
    assert first["retrieved"][0]["locator"]["start_char"] >= 0  # the chunk's place in its text

    replayed = _evaluate(
        tmp_path, "recipe=replay", f"recipe.predictions={predictions}", "evaluator=with_answers"
    )
    assert not replayed.failed_cases and replayed.query_modes == ("replay",)
    # Evidence metrics that read chunk text (context_has_answer) included: the same text.
    assert _scores(replayed) == _scores(original)
    assert {r.case_id: r.answer for r in replayed.case_results} == {
        r.case_id: r.answer for r in original.case_results
    }
    files = replayed.recipe_manifest["files"]
    assert files["predictions"]["sha256"] == hashlib.sha256(predictions.read_bytes()).hexdigest()


def test_evidence_metrics_read_the_retrieved_text_a_file_gives(sample, tmp_path: Path) -> None:
    """`retrieved[].text` is the passage evidence metrics read; the document's text is only
    the fallback for items without one."""
    _, original, predictions = sample
    blanked = tmp_path / "blanked.jsonl"
    with blanked.open("w") as handle:
        for line in predictions.read_text().splitlines():
            record = json.loads(line)
            for item in record["retrieved"]:
                item["text"] = "a passage that says nothing"
            handle.write(json.dumps(record) + "\n")
    replayed = _evaluate(tmp_path, "recipe=replay", f"recipe.predictions={blanked}")
    assert original.score_summary["bm25.context_has_answer@5"] > 0.9
    assert replayed.score_summary["replay.context_has_answer@5"] == 0.0
    # Rankings are the same: document-level metrics do not read text.
    assert replayed.score_summary["replay.ndcg@10"] == original.score_summary["bm25.ndcg@10"]


@pytest.mark.slow
def test_a_run_file_with_predictions_names_what_it_lacks(
    sample, cli: InProcessCli, tmp_path: Path
) -> None:
    """Ranking from the TREC run, answers from the predictions; a docid outside the corpus is
    counted and named (ranked as non-relevant), a case without a line fails, named; the
    result is tracked in MLflow like any run."""
    _, original, predictions = sample
    lines = _trec_lines(original)
    left_out = original.case_results[0].case_id
    lines = [line for line in lines if not line.startswith(f"{left_out} ")]
    lines.append(f"{original.case_results[1].case_id} Q0 no-such-doc 0 99.0 heta")
    run = tmp_path / "run.trec"
    run.write_text("\n".join(lines) + "\n")
    proc = cli(
        "recipe=replay", f"recipe.run={run}", f"recipe.predictions={predictions}",
        "evaluator=with_answers", root=tmp_path / "out",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"{run}: 1 retrieved docid(s) not in the corpus" in proc.stdout
    assert f"{run}:{len(lines)} 'no-such-doc'" in proc.stdout
    assert f"{run} has no line for case '{left_out}'" in proc.stdout

    report = EvaluationReport.model_validate_json(
        next((tmp_path / "out" / "runs").rglob("report.json")).read_text()
    )
    assert [r.case_id for r in report.failed_cases] == [left_out]
    assert report.failed_cases[0].error.stage == "query"
    assert report.recipe_manifest["checks"] == {
        "run.documents_not_in_corpus": 1,
        "run.cases_not_covered": 1,
    }
    second = next(r for r in report.case_results if r.case_id == original.case_results[1].case_id)
    assert second.retrieved[0].document_id == "no-such-doc"

    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'out' / 'mlflow.db'}")
    (tracked,) = client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])
    assert tracked.data.tags["recipe.name"] == "replay"
    assert tracked.data.tags["recipe.run.sha256"] == hashlib.sha256(run.read_bytes()).hexdigest()
    assert (
        tracked.data.tags["recipe.predictions.sha256"]
        == report.recipe_manifest["files"]["predictions"]["sha256"]
    )
    assert tracked.data.metrics["replay.ndcg_at_10"] == pytest.approx(
        report.score_summary["replay.ndcg@10"]
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 x t\n", "run.trec:2: rank must be an integer and score"),
        ("1 Q0 d1 1 2.0 t\n1 Q0 d1 2 1.0 t\n", "run.trec:2: docid 'd1' listed twice for qid '1'"),
        ("1 Q0 d1 1 2.0\n", "run.trec:1: expected 6 fields"),
    ],
)
def test_bad_run_lines_fail_before_any_work(tmp_path: Path, content: str, expected: str) -> None:
    run = tmp_path / "run.trec"
    run.write_text(content)
    with pytest.raises(ConfigError, match="recipe: ") as caught:
        _evaluate(tmp_path, "recipe=replay", f"recipe.run={run}")
    assert f"{tmp_path}/{expected}" in str(caught.value)
    assert not list(tmp_path.rglob("*.json"))  # nothing evaluated, nothing written


def test_bad_prediction_lines_are_each_named(sample, tmp_path: Path) -> None:
    _, _, predictions = sample
    good = predictions.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "\n".join(
            [
                good[0],
                "{not json",
                json.dumps({"case_id": "x", "retrieved": []}),
                json.dumps({"case_id": "y", "answer": "a", "retrieved": [{"doc": "d"}]}),
                good[0],
            ]
        )
    )
    with pytest.raises(ConfigError) as caught:
        _evaluate(tmp_path, "recipe=replay", f"recipe.predictions={bad}")
    message = str(caught.value)
    assert f"{bad}: 4 problem(s)" in message
    assert f"{bad}:2: not JSON" in message
    assert f"{bad}:3: no `answer`" in message
    assert f"{bad}:4: retrieved[0]: keys ['doc'] unknown" in message
    assert f"{bad}:5: case " in message and f"given twice (first at {bad}:1)" in message


def test_unknown_case_ids_fail_before_any_case_is_evaluated(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q-nope Q0 doc-1 1 1.0 t\n")
    with pytest.raises(BenchmarkError, match=rf"{run}:1: case id 'q-nope' is not a case of"):
        _evaluate(tmp_path, "recipe=replay", f"recipe.run={run}")
    assert not list(tmp_path.rglob("report.json"))


@pytest.mark.slow
def test_a_changed_file_is_a_new_run_the_same_file_is_reused(sample, tmp_path: Path) -> None:
    _, original, _ = sample
    run = tmp_path / "run.trec"
    run.write_text("\n".join(_trec_lines(original)) + "\n")
    first = _evaluate(tmp_path, "recipe=replay", f"recipe.run={run}")
    again = _evaluate(tmp_path, "recipe=replay", f"recipe.run={run}")
    assert again.run.reused_from is not None
    assert again.run.reused_from.report_id == first.report_id

    # Same path, other content (another run tag): evaluated anew.
    run.write_text("\n".join(_trec_lines(original, tag="other")) + "\n")
    changed = _evaluate(tmp_path, "recipe=replay", f"recipe.run={run}")
    assert changed.run.reused_from is None
    assert changed.run.identity.config != first.run.identity.config
    assert changed.recipe_manifest["files"]["run"]["tags"] == ["other"]


@pytest.mark.slow
def test_a_scifact_run_file_scores_as_trec_eval_and_compares_with_bm25(
    scifact_dir: Path, scifact_bm25: SharedRun, cli: InProcessCli, tmp_path: Path
) -> None:
    import pytrec_eval

    from heta_eval.benchmarks.beir import read_qrels

    beir = ["benchmark=beir", "benchmark.dataset=scifact", f"benchmark.data_root={scifact_dir}"]
    out = tmp_path / "out"
    bm25_report, bm25 = report_path(scifact_bm25.cli.stdout), scifact_bm25.report

    # The run file a BM25 system wrote: top 100 per query, ranks from 1, real scores, and
    # one docid that is not in the corpus, ranked first for one query.
    lines = _trec_lines(bm25, tag="bm25s")
    first_qid = bm25.case_results[0].case_id
    lines.insert(0, f"{first_qid} Q0 NOT-A-DOC 0 1000.0 bm25s")
    run = tmp_path / "scifact.trec"
    run.write_text("\n".join(lines) + "\n")
    proc = cli(*beir, "recipe=replay", f"recipe.run={run}", root=out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"{run}: 1 retrieved docid(s) not in the corpus" in proc.stdout
    (replay_report,) = list((out / "runs").rglob("report.json"))
    replayed = EvaluationReport.model_validate_json(replay_report.read_text())
    assert not replayed.failed_cases and len(replayed.case_results) == 300

    trec_run: dict[str, dict[str, float]] = {}
    for line in lines:
        qid, _, docid, _, score, _ = line.split()
        trec_run.setdefault(qid, {})[docid] = float(score)
    qrels = read_qrels(scifact_dir / "qrels" / "test.tsv")
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(trec_run)
    for result in replayed.case_results:
        assert result.score("ndcg@10") == pytest.approx(
            reference[result.case_id]["ndcg_cut_10"], abs=1e-6
        )
    mean = sum(q["ndcg_cut_10"] for q in reference.values()) / len(reference)
    assert replayed.score_summary["replay.ndcg@10"] == pytest.approx(mean, abs=1e-6)
    # The extra first-ranked docid costs the one query a little; the rest are the same.
    assert replayed.score_summary["replay.ndcg@10"] <= bm25.score_summary["bm25.ndcg@10"]

    proc = cli(
        str(bm25_report.parent), str(replay_report.parent), "--metrics", "ndcg@10",
        "--resamples", "1000", "--out", str(tmp_path / "cmp"), program="heta-eval-compare",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    comparison = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert [r["recipe"] for r in comparison["runs"]] == ["bm25", "replay"]
    (row,) = comparison["rows"]
    assert row["name"] == "ndcg@10" and row["modes"] == ["bm25", "replay"]
    (test,) = row["tests"]
    assert test["paired"] == 300 and test["excluded"] == 0
    # The one query whose ranking gained a non-document differs; every other query ties.
    assert test["ties"] >= 299 and test["wins"] == 0
    assert test["difference"] == pytest.approx(
        replayed.score_summary["replay.ndcg@10"] - bm25.score_summary["bm25.ndcg@10"], abs=1e-9
    )
