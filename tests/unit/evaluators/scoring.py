"""Retrieved chunks, responses and cases built in one line, and one evaluator's score of a
case: the material of the evaluator tests."""

from __future__ import annotations

import asyncio

from heta_eval.records import (
    BenchmarkCase,
    BenchmarkEvidence,
    BenchmarkExpected,
    QueryResponse,
    QueryResult,
    SourceRef,
)


def make_result(doc: str, chunk: int = 0, text: str = "", page: int | None = None) -> QueryResult:
    return QueryResult(
        id=f"{doc}#{chunk}",
        text=text,
        score=1.0,
        source=SourceRef(
            source_key=f"raw/benchmarks/b/test/{doc}/{doc}.txt",
            document_id=doc,
            chunk_id=f"{doc}#{chunk}",
            chunk_index=chunk,
            page_index=page,
        ),
    )


def make_response(*results: QueryResult, answer: str | None = None) -> QueryResponse:
    return QueryResponse(query="q", mode="bm25", results=results, answer=answer)


def make_case(
    answers: tuple[str, ...] = (), evidence: tuple[BenchmarkEvidence, ...] = ()
) -> BenchmarkCase:
    return BenchmarkCase(
        case_id="c", query="q", expected=BenchmarkExpected(answers=answers, evidence=evidence)
    )


def score_of(evaluator: object, case: BenchmarkCase, response: QueryResponse) -> float | None:
    return asyncio.run(evaluator.evaluate(case, response)).value  # type: ignore[attr-defined]
