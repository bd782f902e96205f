"""The guide's worked examples (examples/) compose, instantiate and run, in this process."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from examples.custom_benchmark import RiversBenchmark
from examples.custom_evaluator import AnswerReciprocalRank
from examples.custom_recipe import ParagraphChunker
from examples.trec_eval_check import main as trec_eval_check
from heta_eval.benchmarks import BenchmarkDataError
from heta_eval.kb import MarkdownParser, RawSource
from heta_eval.protocols import BenchmarkEvaluatorProtocol, BenchmarkProtocol
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkExpected,
    QueryResponse,
    QueryResult,
    SourceRef,
)
from heta_eval.run.assembly import assemble

from ..conftest import REPO, InProcessCli, load_benchmark
from .runs import printed_report, tracked_runs

EXAMPLES_CONF = REPO / "examples" / "conf"
SEARCHPATH = f"hydra.searchpath=[file://{EXAMPLES_CONF}]"


def _compose(tmp_path: Path, *overrides: str):  # type: ignore[no-untyped-def]
    # Outside a Hydra app ${hydra:...} does not resolve: give the paths that use it.
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(
            config_name="config",
            overrides=[
                SEARCHPATH,
                f"paths.root={tmp_path}",
                f"runner.output_dir={tmp_path / 'run'}",
                "tracking=none",
                *overrides,
            ],
        )


def test_the_example_benchmark_implements_the_protocol(tmp_path: Path) -> None:
    cfg = _compose(tmp_path, "benchmark=rivers")
    components = assemble(cfg)
    bench = components.benchmark
    assert isinstance(bench, RiversBenchmark) and isinstance(bench, BenchmarkProtocol)
    documents, cases, units = load_benchmark(bench, tmp_path)
    assert [d.document_id for d in documents] == ["amazon", "danube", "mekong", "nile", "rhine"]
    assert all(d.media_type == "text/markdown" and d.path.is_file() for d in documents)
    assert len(cases) == 10 and [u.unit_id for u in units] == ["corpus"]
    q5 = next(c for c in cases if c.case_id == "q5")
    assert q5.expected.answers == ("Khartoum",)
    assert q5.expected.evidence[0].locator == {"document_id": "nile"}
    assert q5.metadata == {"topic": "course"}
    assert [e.name for e in components.evaluators] == [
        "evidence_recall@1",
        "evidence_recall@3",
        "context_has_answer@3",
    ]


def test_the_example_benchmark_names_file_and_line_of_bad_data(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.md").write_text("# A\n\nSome text.\n")
    (data / "questions.csv").write_text(
        "id,question,answer,source,evidence,topic\nq1,What?,x,a.md,Some text.,t\nq2,,x,a.md,e,t\n"
    )
    with pytest.raises(BenchmarkDataError, match=r"questions\.csv:3: question: must not be empty"):
        load_benchmark(RiversBenchmark(data_dir=data), tmp_path)
    (data / "questions.csv").write_text("id,question\nq1,What?\n")
    with pytest.raises(BenchmarkDataError, match=r"questions\.csv:1: missing columns"):
        load_benchmark(RiversBenchmark(data_dir=data), tmp_path)


def test_the_example_chunker_keeps_offsets_and_joins_headings() -> None:
    path = REPO / "examples" / "custom_benchmark" / "data" / "danube.md"
    source = RawSource(key="raw/x/danube.md", document_id="danube", media_type="text/markdown")
    parsed = MarkdownParser().parse(source, path.read_bytes())
    chunks = ParagraphChunker(min_words=5).chunk(parsed)
    assert all(parsed.text[c.start_char : c.end_char] == c.text for c in chunks)
    assert [c.locator["section"] for c in chunks] == [
        "Danube",
        "Danube > Course",
        "Danube > Course",
        "Danube > Cities",
    ]
    assert chunks[1].text.startswith("## Course\n\nThe Danube rises")
    assert (
        chunks[2].text == "It passes through ten countries, more than any other river in the world."
    )
    # Every paragraph on its own when min_words is 1: the two heading lines become chunks too.
    assert len(ParagraphChunker(min_words=1).chunk(parsed)) == 6
    with pytest.raises(ValueError, match="min_words must be >= 1"):
        ParagraphChunker(min_words=0)


def _response(*texts: str) -> QueryResponse:
    results = tuple(
        QueryResult(
            id=f"d#{i}",
            text=t,
            score=1.0 / (i + 1),
            source=SourceRef(source_key="k", document_id="d"),
        )
        for i, t in enumerate(texts)
    )
    return QueryResponse(query="q", mode="bm25", results=results)


def test_the_example_evaluator_scores_the_rank_of_the_answer() -> None:
    metric = AnswerReciprocalRank(k=2)
    assert isinstance(metric, BenchmarkEvaluatorProtocol) and metric.name == "answer_mrr@2"
    case = BenchmarkCase(
        case_id="c", query="q", expected=BenchmarkExpected(answers=("Lake Constance",))
    )
    score = asyncio.run(metric.evaluate(case, _response("no", "It flows through lake constance.")))
    assert score.value == 0.5 and score.details == {"rank": 2}
    # Beyond k, and a word that merely contains the answer ("Constances"), score 0.
    assert asyncio.run(metric.evaluate(case, _response("a", "b", "Lake Constance"))).value == 0.0
    assert asyncio.run(metric.evaluate(case, _response("lake constances"))).value == 0.0
    skipped = asyncio.run(metric.evaluate(BenchmarkCase(case_id="c", query="q"), _response("x")))
    assert skipped.value is None and skipped.skipped_reason == "no expected answers"


def test_the_example_recipes_and_evaluator_compose_and_run(tmp_path: Path) -> None:
    cfg = _compose(tmp_path, "benchmark=rivers", "recipe=sentence_fusion", "evaluator=answer_rank")
    components = assemble(cfg)
    assert components.recipe.query_modes == ("stemmed", "exact", "fusion")
    assert components.recipe.chunker["max_words"] == 40  # ${..chunk_size} resolved
    assert [e.name for e in components.evaluators][-1] == "answer_mrr@10"
    report = asyncio.run(components.runner().run())
    assert not report.failed_cases
    summary = report.score_summary
    assert set(summary) == {
        f"{mode}.{metric}"
        for mode in ("stemmed", "exact", "fusion")
        for metric in (
            "evidence_recall@1",
            "evidence_recall@3",
            "context_has_answer@3",
            "answer_mrr@10",
        )
    }
    assert summary["fusion.evidence_recall@3"] == 1.0
    paragraphs = assemble(_compose(tmp_path, "benchmark=rivers", "recipe=paragraphs"))
    assert isinstance(paragraphs.recipe.create_chunker(), ParagraphChunker)


def test_the_extending_guide_command_runs_the_examples(cli: InProcessCli, tmp_path: Path) -> None:
    # What docs/extending.md shows, from the repository root; here cwd is tmp_path, so the search
    # path is absolute and a copy of examples/ is not needed: the editable install (or
    # PYTHONPATH) makes `examples` importable.
    proc = cli(SEARCHPATH, "benchmark=rivers", "recipe=paragraphs", "evaluator=answer_rank")
    assert proc.returncode == 0, proc.stderr
    report = printed_report(proc.stdout)
    assert report.benchmark.name == "rivers" and report.recipe_manifest["name"] == "paragraphs"
    summary = report.score_summary
    assert summary["bm25.evidence_recall@3"] == 1.0
    assert summary["bm25.answer_mrr@10"] == pytest.approx(0.95)
    assert report.score_slices  # by topic, as the adapter's slice_by asks
    (run,) = tracked_runs(tmp_path / "outputs")
    assert run.data.metrics["bm25.answer_mrr_at_10"] == pytest.approx(0.95)
    assert run.data.params["benchmark._target_"] == "examples.custom_benchmark.RiversBenchmark"


def _tiny_beir(root: Path) -> Path:
    """Eight documents, four queries, graded judgments, in the official BEIR layout."""
    words = ["river", "delta", "glacier", "lake", "canyon", "estuary", "marsh", "spring"]
    corpus = [
        {"_id": f"d{i}", "title": w, "text": f"The {w} and the {words[(i + 1) % 8]} meet here."}
        for i, w in enumerate(words)
    ]
    queries = [{"_id": f"q{i}", "text": f"where does the {words[i]} meet"} for i in range(4)]
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    qrels = ["query-id\tcorpus-id\tscore", "q0\td0\t2", "q0\td7\t1", "q1\td1\t1", "q2\td5\t1"]
    qrels += ["q3\td3\t2", "q3\td2\t1"]
    (root / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    return root


def test_the_trec_eval_check_agrees_on_a_beir_run(
    cli: InProcessCli, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _tiny_beir(tmp_path / "tiny")
    proc = cli(
        "benchmark=beir", "benchmark.dataset=tiny", f"benchmark.data_root={data}", "tracking=none"
    )
    assert proc.returncode == 0, proc.stderr
    report = next(x for x in proc.stdout.splitlines() if x.startswith("report: "))[8:]
    # examples/trec_eval_check.py's main, as `python examples/trec_eval_check.py` calls it.
    status = trec_eval_check([report, str(data / "qrels" / "test.tsv")])
    check = capsys.readouterr()
    assert status == 0, check.out + check.err
    assert "4 judged queries" in check.out and "agree with trec_eval" in check.out
