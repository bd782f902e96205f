"""MultiHopRagBenchmark reads the published JSON arrays, runs end to end, and locates bad input."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from heta_eval import BenchmarkRunner, RunnerSettings
from heta_eval.benchmarks import BenchmarkDataError
from heta_eval.benchmarks.multihop_rag import (
    QUESTION_TYPES,
    MultiHopRagBenchmark,
    article_document_id,
)
from heta_eval.evaluators.exhaustive import exhaustive_reason
from heta_eval.records import QueryResponse, QueryResult, SourceRef
from tests.conftest import load_benchmark, load_recipe

ARTICLES = [
    {
        "title": "Nimbus Robotics raises $40 million to scale its warehouse drones",
        "author": "Priya Natarajan",
        "source": "TechCrunch",
        "published_at": "2023-10-02T14:00:00+00:00",
        "category": "technology",
        "url": "https://techcrunch.example/2023/10/02/nimbus-robotics-series-b/",
        "body": (
            "Nimbus Robotics, a Denver startup building inventory drones for warehouses, said "
            "on Monday it had raised $40 million in a Series B round led by Harbor Ventures. "
            "Chief executive Lena Ortiz said the money would pay for a second assembly line in "
            "Colorado. The drones scan shelf barcodes overnight and sync the counts with "
            "warehouse software before the morning shift starts."
        ),
    },
    {
        "title": "Harbor Ventures closes a $600 million fund for automation startups",
        "author": "Daniel Brooks",
        "source": "The Verge",
        "published_at": "2023-10-19T09:30:00+00:00",
        "category": "technology",
        "url": "https://theverge.example/2023/10/19/harbor-ventures-fund-iv",
        "body": (
            "Harbor Ventures, the firm that led the latest round of drone maker Nimbus "
            "Robotics, closed its fourth fund at $600 million. Partner Sam Whitfield said the "
            "fund would back about twenty companies in logistics and industrial automation "
            "over the next three years."
        ),
    },
    {
        "title": "Riverside Hawks beat Lakeport Mariners 3-1 to reach the cup final",
        "author": "Marcus Hale",
        "source": "Sporting News",
        "published_at": "2023-11-12T21:15:00+00:00",
        "category": "sports",
        "url": "https://sportingnews.example/soccer/hawks-mariners-semi-final",
        "body": (
            "Striker Tomas Reyes scored twice as the Riverside Hawks beat the Lakeport "
            "Mariners 3-1 in the cup semi-final on Sunday. Goalkeeper Ana Silva saved a "
            "penalty early in the second half, and the Hawks will meet Northgate City in the "
            "final next month."
        ),
    },
    {
        "title": "Lakeport Mariners dismiss coach Ivan Petrov after semi-final defeat",
        "author": "Grace Whitman",
        "source": "BBC Sport",
        "published_at": "2023-11-14T08:00:00+00:00",
        "category": "sports",
        "url": "https://bbcsport.example/football/lakeport-petrov-dismissed",
        "body": (
            "The Lakeport Mariners dismissed head coach Ivan Petrov on Tuesday, two days after "
            "the 3-1 cup semi-final loss to the Riverside Hawks. Assistant coach Mia Laine "
            "will lead the team until a permanent replacement is found."
        ),
    },
    {
        "title": "Greenfield Foods reports a third-quarter profit margin of 12 percent",
        "author": "Olivia Chen",
        "source": "Fortune",
        "published_at": "2023-10-25T12:00:00+00:00",
        "category": "business",
        "url": "https://fortune.example/2023/10/25/greenfield-foods-q3-earnings",
        "body": (
            "Greenfield Foods reported a third-quarter profit margin of 12 percent, up from "
            "10 percent a year earlier, as lower grain prices offset weaker demand for "
            "packaged snacks. Revenue rose 4 percent to $2.1 billion."
        ),
    },
    {
        "title": "Orchard Mills says rising costs cut its quarterly profit margin",
        "author": "Ravi Menon",
        "source": "Business Insider",
        "published_at": "2023-10-27T15:45:00+00:00",
        "category": "business",
        "url": "https://businessinsider.example/orchard-mills-q3-2023",
        "body": (
            "Orchard Mills reported a third-quarter profit margin of 9 percent, down from 11 "
            "percent, citing higher packaging and freight costs. The flour producer kept its "
            "full-year outlook unchanged."
        ),
    },
    {
        "title": "Study links a daily walk to lower blood pressure in adults over 60",
        "author": "Helen Park",
        "source": "Science News",
        "published_at": "2023-12-01T10:00:00+00:00",
        "category": "health",
        "url": "https://sciencenews.example/article/walking-blood-pressure-older-adults",
        "body": (
            "Adults over 60 who walked for 30 minutes a day had systolic blood pressure about "
            "5 points lower after six months than those who did not, according to a trial of "
            "1,200 volunteers in Finland. The researchers said brisk pace mattered less than "
            "walking every day."
        ),
    },
]


def _evidence(article: dict, fact: str) -> dict:
    keys = ("title", "author", "url", "source", "category", "published_at")
    return {**{k: article[k] for k in keys}, "fact": fact}


QUERIES = [
    {
        "query": (
            "Which firm, according to TechCrunch, led the Series B round of the Denver startup "
            "whose drones scan warehouse shelf barcodes, and later closed a $600 million fund "
            "as reported by The Verge?"
        ),
        "answer": "Harbor Ventures",
        "question_type": "inference_query",
        "evidence_list": [
            _evidence(
                ARTICLES[0],
                "Nimbus Robotics, a Denver startup building inventory drones for warehouses, "
                "said on Monday it had raised $40 million in a Series B round led by Harbor "
                "Ventures.",
            ),
            _evidence(
                ARTICLES[1],
                "Harbor Ventures, the firm that led the latest round of drone maker Nimbus "
                "Robotics, closed its fourth fund at $600 million.",
            ),
        ],
    },
    {
        "query": (
            "Did Greenfield Foods, as reported by Fortune, have a higher third-quarter profit "
            "margin than Orchard Mills, as reported by Business Insider?"
        ),
        "answer": "Yes",
        "question_type": "comparison_query",
        "evidence_list": [
            _evidence(
                ARTICLES[4],
                "Greenfield Foods reported a third-quarter profit margin of 12 percent, up from "
                "10 percent a year earlier.",
            ),
            _evidence(
                ARTICLES[5],
                "Orchard Mills reported a third-quarter profit margin of 9 percent, down from "
                "11 percent.",
            ),
        ],
    },
    {
        "query": (
            "Was the Lakeport Mariners coach dismissed, as reported by BBC Sport, before or "
            "after the semi-final loss to the Riverside Hawks reported by Sporting News?"
        ),
        "answer": "after",
        "question_type": "temporal_query",
        "evidence_list": [
            _evidence(
                ARTICLES[2],
                "Striker Tomas Reyes scored twice as the Riverside Hawks beat the Lakeport "
                "Mariners 3-1 in the cup semi-final on Sunday.",
            ),
            _evidence(
                ARTICLES[3],
                "The Lakeport Mariners dismissed head coach Ivan Petrov on Tuesday, two days "
                "after the 3-1 cup semi-final loss to the Riverside Hawks.",
            ),
        ],
    },
    {
        "query": "What salary did Nimbus Robotics offer its new chief technology officer?",
        "answer": "Insufficient information.",
        "question_type": "null_query",
        "evidence_list": [],
    },
    {
        "query": (
            "According to Science News, how long a daily walk was linked to lower blood "
            "pressure in adults over 60?"
        ),
        "answer": "30 minutes",
        "question_type": "inference_query",
        "evidence_list": [
            _evidence(
                ARTICLES[6],
                "Adults over 60 who walked for 30 minutes a day had systolic blood pressure "
                "about 5 points lower after six months than those who did not.",
            )
        ],
    },
    {
        "query": (
            "Which team did the Riverside Hawks beat in the semi-final reported by Sporting "
            "News, and which coach did that team dismiss according to BBC Sport?"
        ),
        "answer": "Lakeport Mariners",
        "question_type": "comparison_query",
        "evidence_list": [
            _evidence(
                ARTICLES[2],
                "Striker Tomas Reyes scored twice as the Riverside Hawks beat the Lakeport "
                "Mariners 3-1 in the cup semi-final on Sunday.",
            ),
            _evidence(
                ARTICLES[3],
                "The Lakeport Mariners dismissed head coach Ivan Petrov on Tuesday.",
            ),
        ],
    },
]


def _write(root: Path, corpus: object = None, queries: object = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, value in (("corpus.json", corpus), ("MultiHopRAG.json", queries)):
        value = (
            {"corpus.json": ARTICLES, "MultiHopRAG.json": QUERIES}[name] if value is None else value
        )
        text = value if isinstance(value, str) else json.dumps(value, indent=2)
        (root / name).write_text(text, encoding="utf-8")
    return root


_load = load_benchmark


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    return _write(tmp_path / "dataset")


def test_documents_cases_and_units(data_root: Path, tmp_path: Path) -> None:
    bench = MultiHopRagBenchmark(data_root=data_root)
    documents, cases, units = _load(bench, tmp_path)
    again, _, _ = _load(MultiHopRagBenchmark(data_root=str(data_root)), tmp_path)
    assert [d.document_id for d in documents] == [d.document_id for d in again]
    assert len({d.document_id for d in documents}) == len(ARTICLES) == len(documents)

    ids = {a["url"]: d.document_id for a, d in zip(ARTICLES, documents, strict=True)}
    first = documents[0]
    assert first.document_id == article_document_id(ARTICLES[0]["url"], ARTICLES[0]["title"])
    assert first.document_id.startswith("mh-") and len(first.document_id) == 19
    assert first.name == f"{first.document_id}.txt" and first.media_type == "text/plain"
    assert first.data is not None
    assert first.data.decode().startswith(ARTICLES[0]["title"] + "\n" + "Nimbus Robotics, a")
    assert first.metadata["url"] == ARTICLES[0]["url"]
    assert first.metadata["source"] == "TechCrunch"
    assert first.metadata["published_at"] == "2023-10-02T14:00:00+00:00"

    assert [c.case_id for c in cases] == [f"mhrag-{i:04d}" for i in range(len(QUERIES))]
    assert {c.metadata["question_type"] for c in cases} == set(QUESTION_TYPES)
    comparison = cases[1]
    assert comparison.expected.answers == ("Yes",)
    assert [e.locator["document_id"] for e in comparison.expected.evidence] == [
        ids[ARTICLES[4]["url"]],
        ids[ARTICLES[5]["url"]],
    ]
    assert comparison.expected.evidence[0].reference_id == ids[ARTICLES[4]["url"]]
    assert comparison.expected.evidence[1].text == QUERIES[1]["evidence_list"][1]["fact"]
    assert comparison.expected.evidence[1].metadata["source"] == "Business Insider"
    null = cases[3]
    assert null.metadata == {"question_type": "null_query"}
    assert null.expected.answers == ("Insufficient information.",)
    assert null.expected.evidence == ()

    assert [(u.unit_id, u.document_ids, u.case_ids) for u in units] == [("corpus", (), ())]
    assert bench.manifest.key == "multihop_rag/official/all"
    assert bench.manifest.task_type == "multi_hop_qa" and bench.manifest.build_scope == "corpus"
    assert bench.manifest.citation and "2401.15391" in bench.manifest.citation
    assert [r.uri for r in bench.resources()] == [
        "https://raw.githubusercontent.com/yixuantt/MultiHop-RAG/main/dataset/corpus.json",
        "https://raw.githubusercontent.com/yixuantt/MultiHop-RAG/main/dataset/MultiHopRAG.json",
    ]
    assert all(r.checksum is None for r in bench.resources())
    assert [e.name for e in bench.evaluators()] == [
        "evidence_recall@2",
        "evidence_recall@4",
        "evidence_recall@10",
        "all_evidence@10",
        "context_has_answer@10",
        "answer_contains",
    ]


@pytest.mark.parametrize(
    "chunking",
    [{}, {"chunk_size": 24, "chunk_overlap": 4}],
    ids=["whole-articles", "24-word-chunks"],
)
def test_end_to_end_with_bm25_is_sliced_by_question_type(
    data_root: Path, tmp_path: Path, chunking: dict
) -> None:
    bench = MultiHopRagBenchmark(data_root=data_root)
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=load_recipe(**chunking),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(
            top_k=10, output_dir=tmp_path / "run", store_dir=tmp_path / "store"
        ),
    )
    report = asyncio.run(runner.run())
    assert len(report.case_results) == len(QUERIES) and not report.failed_cases
    assert report.knowledge_base_manifests[0].counts["documents"] == len(ARTICLES)
    assert set(report.score_slices) == {f"question_type={t}" for t in QUESTION_TYPES}
    comparison = report.score_slices["question_type=comparison_query"]
    assert 0.0 <= comparison["bm25.evidence_recall@4"] <= 1.0
    # The null query has no evidence: skipped, so its slice has no evidence recall at all.
    assert "bm25.evidence_recall@4" not in report.score_slices["question_type=null_query"]
    chunks = report.knowledge_base_manifests[0].counts["chunks"]
    for k in (2, 4, 10):
        key = f"bm25.evidence_recall@{k}"
        if chunks <= k:
            # The top k holds every chunk of the knowledge base: recall cannot fail.
            assert key not in report.score_summary
            assert report.score_details[key].skipped_reasons == {
                exhaustive_reason(k): len(QUERIES) - 1,
                "no evidence labels": 1,
            }
            continue
        assert 0.0 <= report.score_summary[key] <= 1.0
        assert report.score_details[key].skipped == 1
    for result in report.case_results:
        at = [result.score(f"evidence_recall@{k}") for k in (2, 4, 10)]
        scored = [a for a in at if a is not None]
        assert scored == sorted(scored)
    recall4 = [r.score("evidence_recall@4") for r in report.case_results]
    assert 1.0 in recall4
    # answer_contains needs a generated answer, which the bm25 recipe does not produce.
    assert "bm25.answer_contains" not in report.score_summary
    assert report.score_summary["bm25.context_has_answer@10"] > 0.0


def _chunk(document_id: str, text: str, rank: int) -> QueryResult:
    key = f"raw/benchmarks/multihop_rag/all/{document_id}/{document_id}.txt"
    return QueryResult(
        id=f"{document_id}#{rank}",
        text=text,
        score=1.0 / rank,
        source=SourceRef(source_key=key, document_id=document_id),
    )


def test_evidence_needs_the_right_article_and_most_of_the_fact(tmp_path: Path) -> None:
    fact = QUERIES[4]["evidence_list"][0]["fact"]
    quoted = {
        **ARTICLES[0],
        "url": "https://elsewhere.example/walking-roundup",
        "title": "Health roundup",
        "body": fact,
    }
    root = _write(tmp_path / "quoted", corpus=[ARTICLES[6], quoted], queries=[QUERIES[4]])
    bench = MultiHopRagBenchmark(data_root=root, top_k_evidence=[2])
    documents, cases, _ = _load(bench, tmp_path)
    right, other = (d.document_id for d in documents)
    recall = bench.evaluators()[0]

    def score(*results: QueryResult) -> float | None:
        response = QueryResponse(query=cases[0].query, mode="bm25", results=results)
        return asyncio.run(recall.evaluate(cases[0], response)).value

    # A chunk boundary cuts the fact's last words off: most of it is still there.
    cut = fact.rsplit(" ", 3)[0]
    assert score(_chunk(right, "Earlier text. " + cut, 1)) == 1.0
    # The same fact quoted by another outlet, or the right article without it, is a miss.
    assert score(_chunk(other, fact, 1)) == 0.0
    assert score(_chunk(right, ARTICLES[6]["title"], 1)) == 0.0
    # Beyond k it does not count either.
    assert score(_chunk(other, fact, 1), _chunk(other, fact, 2), _chunk(right, fact, 3)) == 0.0
    strict = MultiHopRagBenchmark(data_root=root, evidence_min_text_overlap=None).evaluators()[0]
    response = QueryResponse(query="q", mode="bm25", results=(_chunk(right, cut, 1),))
    assert asyncio.run(strict.evaluate(cases[0], response)).value == 0.0


@pytest.mark.parametrize(
    ("corpus", "queries", "message"),
    [
        (
            '[\n  {"title": "A", "body": "b",\n   "url": }\n]',
            None,
            r"corpus\.json:3: invalid JSON at column \d+",
        ),
        ({"title": "A", "body": "b"}, None, r"corpus\.json: expected a JSON array"),
        (
            [ARTICLES[0], {"title": "No body", "url": "https://x.example/a"}],
            None,
            r"corpus\.json\[1\]\.body: Field required",
        ),
        (
            None,
            [QUERIES[0], {k: v for k, v in QUERIES[1].items() if k != "query"}],
            r"MultiHopRAG\.json\[1\]\.query: Field required",
        ),
        (
            None,
            [
                {
                    **QUERIES[1],
                    "evidence_list": [
                        QUERIES[1]["evidence_list"][0],
                        {"title": "t", "url": "https://x.example/a"},
                    ],
                }
            ],
            r"MultiHopRAG\.json\[0\]\.evidence_list\[1\]\.fact: Field required",
        ),
        (None, [QUERIES[0], "not an object"], r"MultiHopRAG\.json\[1\]: expected a JSON object"),
    ],
)
def test_malformed_inputs_name_file_index_and_field(
    tmp_path: Path, corpus: object, queries: object, message: str
) -> None:
    root = _write(tmp_path / "bad", corpus=corpus, queries=queries)
    with pytest.raises(BenchmarkDataError, match=message):
        _load(MultiHopRagBenchmark(data_root=root), tmp_path)


def test_missing_files_name_the_data_root(tmp_path: Path) -> None:
    root = tmp_path / "partial"
    root.mkdir()
    (root / "corpus.json").write_text(json.dumps(ARTICLES))
    with pytest.raises(BenchmarkDataError, match=r"benchmark\.data_root: MultiHopRAG\.json not"):
        _load(MultiHopRagBenchmark(data_root=root), tmp_path)
    with pytest.raises(BenchmarkDataError, match=r"benchmark\.data_root: not a directory"):
        _load(MultiHopRagBenchmark(data_root=tmp_path / "absent"), tmp_path)


def test_evidence_outside_the_corpus_is_kept_as_text_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stray = {
        "title": "An article the corpus does not have",
        "url": "https://nowhere.example/missing",
        "source": "Nowhere Times",
        "fact": "Something that was reported elsewhere.",
    }
    queries = [
        {**QUERIES[1], "evidence_list": [*QUERIES[1]["evidence_list"], stray]},
        {**QUERIES[4], "evidence_list": [stray]},
    ]
    # Without a url match, the title still locates an article.
    by_title = {**QUERIES[4]["evidence_list"][0], "url": "https://moved.example/x"}
    queries.append({**QUERIES[4], "evidence_list": [by_title]})
    root = _write(tmp_path / "stray", queries=queries)
    with caplog.at_level(logging.WARNING, logger="heta_eval.benchmarks.multihop_rag"):
        documents, cases, _ = _load(MultiHopRagBenchmark(data_root=root), tmp_path)
    kept = cases[0].expected.evidence[2]
    assert kept.text == stray["fact"] and kept.locator == {} and kept.reference_id is None
    assert len(cases[0].expected.evidence) == 3 and len(cases[1].expected.evidence) == 1
    assert cases[2].expected.evidence[0].locator == {"document_id": documents[6].document_id}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "2 evidence item(s)" in warnings[0].getMessage()


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="split must be 'all'"):
        MultiHopRagBenchmark(split="test")
    with pytest.raises(ValueError, match="at least one k"):
        MultiHopRagBenchmark(top_k_evidence=())
    with pytest.raises(ValueError, match="lists a k twice"):
        MultiHopRagBenchmark(top_k_evidence=(4, 4))
    with pytest.raises(ValueError, match="min_text_overlap must be within"):
        MultiHopRagBenchmark(evidence_min_text_overlap=1.5)
    names = [e.name for e in MultiHopRagBenchmark(top_k_evidence=[5]).evaluators()]
    assert names == [
        "evidence_recall@5",
        "all_evidence@5",
        "context_has_answer@5",
        "answer_contains",
    ]


def test_repeated_articles_are_kept_once_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    corpus = [*ARTICLES, {**ARTICLES[5], "url": ARTICLES[1]["url"]}]
    root = _write(tmp_path / "dup", corpus=corpus, queries=None)
    with caplog.at_level(logging.WARNING):
        documents, _, _ = _load(MultiHopRagBenchmark(data_root=root), tmp_path)
    assert len(documents) == len(ARTICLES)
    assert f"corpus.json[{len(ARTICLES)}] repeats [1]" in caplog.text
