"""BEIR's ignore_identical_ids under every evaluator set, on ArguAna-shaped data.

In ArguAna each query is an argument that is also a corpus document; BEIR drops a query's
own document from its results (retrieving one more first). The benchmark owns that
convention, so `evaluator=retrieval` must keep it too.
"""

from __future__ import annotations

import json
from pathlib import Path

import heta_eval

TOPICS = {
    "q1": ("school uniforms limit self expression of pupils", "uniforms reduce bullying pupils"),
    "q2": ("nuclear power is too dangerous for cities", "nuclear power plants are safe today"),
    "q3": ("zoos should be banned for animal welfare", "zoos protect endangered animal species"),
    "q4": ("homework harms the free time of children", "homework builds habits for children"),
}
# Each noise document shares one word with every query, so each query has more than
# top_k + 1 documents to rank.
NOISE = [
    "the weather in spring is mild: school, nuclear, zoos, homework",
    "a recipe for bread with flour: school, nuclear, zoos, homework",
    "football clubs sign new players: school, nuclear, zoos, homework",
    "mountains are covered with snow: school, nuclear, zoos, homework",
]


def _arguana_like(root: Path) -> Path:
    """Each query's text is also a document with the query's id; its counter-argument
    `c{N}` is the one relevant document."""
    (root / "qrels").mkdir(parents=True)
    corpus = []
    for qid, (argument, counter) in TOPICS.items():
        corpus.append({"_id": qid, "title": "", "text": argument})
        corpus.append({"_id": f"c{qid[1:]}", "title": "", "text": counter})
    corpus += [{"_id": f"n{i}", "title": "", "text": t} for i, t in enumerate(NOISE)]
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    queries = [{"_id": qid, "text": argument} for qid, (argument, _) in TOPICS.items()]
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    qrels = ["query-id\tcorpus-id\tscore"] + [f"{q}\tc{q[1:]}\t1" for q in TOPICS]
    (root / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    return root


def _run(root: Path, data: Path, *extra: str) -> heta_eval.EvaluationReport:
    overrides = [
        f"paths.root={root}",
        "benchmark=beir",
        "benchmark.dataset=arguana_like",
        f"benchmark.data_root={data}",
        "runner.top_k=3",
        "runner.progress=off",
        "tracking=none",
        *extra,
    ]
    return heta_eval.evaluate(overrides=overrides)


def test_self_hits_are_dropped_whatever_the_evaluator_set(tmp_path: Path) -> None:
    data = _arguana_like(tmp_path / "arguana_like")
    default_report = _run(tmp_path / "defaults", data)
    chosen_report = _run(tmp_path / "retrieval", data, "evaluator=retrieval")
    defaults, chosen = default_report.score_summary, chosen_report.score_summary
    # Each query's own document ranks first; without it the counter-argument is at rank 1.
    assert defaults["bm25.ndcg@10"] == 1.0
    assert chosen["bm25.ndcg@10"] == 1.0  # 0.63 when the self-hit is scored
    assert chosen["bm25.mrr@10"] == 1.0 and chosen["bm25.success@10"] == 1.0
    for report in (default_report, chosen_report):
        assert len(report.case_results) == len(TOPICS)
        for case in report.case_results:
            ids = [item.document_id for item in case.retrieved]
            # top_k + 1 were retrieved, the query's own document dropped: still top_k results.
            assert case.case_id not in ids and len(ids) == 3, (case.case_id, ids)
