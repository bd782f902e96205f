"""The endpoint reranker reorders the top results by the scores a `/v1/rerank` endpoint gives,
and names its attempts when the endpoint keeps failing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from heta_eval.kb.rerank import EndpointReranker
from heta_eval.records import QueryResult, SourceRef
from tests.openai_server import Reply, serve_chat


def _result(i: int, text: str) -> QueryResult:
    return QueryResult(
        id=f"d{i}#0",
        text=text,
        score=1.0,
        source=SourceRef(source_key=f"raw/d{i}", document_id=f"d{i}"),
    )


def test_an_endpoint_reranker_reorders_the_top_results(tmp_path: Path) -> None:
    results = [_result(1, "Saturn has rings."), _result(2, "Otters rest in kelp."), _result(3, "x")]
    scores = {"Saturn has rings.": 0.1, "Otters rest in kelp.": 0.9}
    with serve_chat() as server:
        server.paths.add("/v1/rerank")
        server.replies.append(
            Reply(
                body={
                    "results": [
                        {"index": i, "relevance_score": scores[text]}
                        for i, text in enumerate(["Saturn has rings.", "Otters rest in kelp."])
                    ]
                }
            )
        )
        reranker = EndpointReranker(
            base_url=server.base_url, model="rerank-test", api_key_env=None, top_n=2
        )
        ranked = asyncio.run(reranker.rerank("where do otters rest", results))
        assert [r.id for r in ranked] == ["d2#0", "d1#0"]  # the third result was not scored
        assert [r.score for r in ranked] == [0.9, 0.1]
        (request,) = server.requests
        assert request.path == "/v1/rerank"
        assert request.body["documents"] == ["Saturn has rings.", "Otters rest in kelp."]
        server.replies.append(Reply(body={"results": [{"index": 0, "relevance_score": 1.0}]}))
        server.replies.append(Reply(body={"results": [{"index": 0, "relevance_score": 1.0}]}))
        flaky = EndpointReranker(
            base_url=server.base_url,
            model="m",
            api_key_env=None,
            top_n=2,
            max_retries=1,
            backoff_seconds=0.01,
        )
        with pytest.raises(Exception, match="after 2 attempts"):
            asyncio.run(flaky.rerank("q", results))
