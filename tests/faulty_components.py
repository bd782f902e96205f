"""Real (not mocked) components that fail on purpose, to test how failures are recorded."""

from __future__ import annotations

from collections.abc import Sequence

from heta_eval.kb import BM25Index
from heta_eval.kb.documents import Chunk
from heta_eval.kb.indexes import Hits
from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse


class QueryFailsOnWord:
    """A BM25 index whose search raises for queries containing `word`."""

    def __init__(self, word: str = "boom") -> None:
        self.word = word

    def build(self, chunks: Sequence[Chunk]) -> QueryFailsOnWord._Built:
        return QueryFailsOnWord._Built(BM25Index().build(chunks), self.word)

    class _Built:
        batches_queries = True  # like the BM25 index it wraps: a failing batch is retried

        def __init__(self, inner: object, word: str) -> None:
            self.inner = inner
            self.word = word

        def search(self, queries: Sequence[str], top_k: int) -> list[Hits]:
            if any(self.word in q.lower() for q in queries):
                raise RuntimeError(f"index refused a query containing {self.word!r}")
            return self.inner.search(queries, top_k)  # type: ignore[attr-defined]


class BuildAlwaysFails:
    """An index builder that cannot build."""

    def build(self, chunks: Sequence[Chunk]) -> None:
        raise OSError("disk full while writing the index")


class ScoreFailsForCase:
    """An evaluator that raises for one case id and scores 1.0 otherwise."""

    name = "fragile"

    def __init__(self, case_id: str) -> None:
        self.case_id = case_id

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        if case.case_id == self.case_id:
            raise ZeroDivisionError("fragile evaluator divided by zero")
        return EvaluationScore(name=self.name, value=1.0)


class SlowQueries:
    """A BM25 index (same settings as BM25Index) that takes `seconds` per query, so that a
    run can be interrupted halfway."""

    def __init__(self, seconds: float = 0.05, **bm25: object) -> None:
        self.seconds = seconds
        self.bm25 = BM25Index(**bm25)  # type: ignore[arg-type]

    def build(self, chunks: Sequence[Chunk]) -> SlowQueries._Built:
        return SlowQueries._Built(self.bm25.build(chunks), self.seconds)

    class _Built:
        def __init__(self, inner: object, seconds: float) -> None:
            self.inner = inner
            self.seconds = seconds

        def search(self, queries: Sequence[str], top_k: int) -> list[Hits]:
            import time

            time.sleep(self.seconds * len(queries))
            return self.inner.search(queries, top_k)  # type: ignore[attr-defined]
