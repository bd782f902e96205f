"""Scoring cost per 1,000 cases for each built-in metric, on synthetic responses.

Usage: python benchmarks/scoring_cost.py [--cases 2000] [--results 100]

Each case has 5 graded judgments / evidence items and a response of `--results` chunk hits
(with repeated documents); the script times every evaluator over all cases and prints
milliseconds per 1,000 cases.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heta_eval.evaluators import (
    AnswerContains,
    AnswerExactMatch,
    AnswerNumericMatch,
    AnswerTokenF1,
    EvidenceMatcher,
    evidence_metrics,
    retrieval_metrics,
)
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkEvidence,
    BenchmarkExpected,
    QueryResponse,
    QueryResult,
    SourceRef,
)


def make_cases(n: int, results: int, seed: int = 0) -> list[tuple[BenchmarkCase, QueryResponse]]:
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        docs = [f"d{j}" for j in rng.sample(range(500), 5)]
        evidence = tuple(
            BenchmarkEvidence(
                locator={"document_id": d, "page_index": rng.randint(0, 3)},
                text=f"fact {d} number {i}",
                metadata={"relevance": rng.randint(1, 2)},
            )
            for d in docs
        )
        case = BenchmarkCase(
            case_id=str(i),
            query="q",
            expected=BenchmarkExpected(answers=("57%", "0.57484"), evidence=evidence),
        )
        hits = tuple(
            QueryResult(
                id=f"d{rng.randint(0, 499)}#{r}",
                text=f"some retrieved text with fact d{rng.randint(0, 499)} number {i}",
                score=rng.random(),
                source=SourceRef(
                    source_key="raw/x",
                    document_id=f"d{rng.randint(0, 499)}",
                    chunk_id=f"c{r}",
                    page_index=rng.randint(0, 3),
                ),
            )
            for r in range(results)
        )
        pairs.append((case, QueryResponse(query="q", mode="m", results=hits, answer="about 57.5%")))
    return pairs


async def time_evaluator(evaluator, pairs) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    for case, response in pairs:
        await evaluator.evaluate(case, response)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--results", type=int, default=100)
    args = parser.parse_args()
    pairs = make_cases(args.cases, args.results)
    evaluators = [
        *retrieval_metrics(
            metrics=["ndcg", "recall", "map", "mrr", "precision", "success", "r_precision"],
            ks=[10, 100],
        ),
        *evidence_metrics(metrics=["recall", "precision", "ndcg", "mrr", "all"], ks=[10]),
        *evidence_metrics(
            metrics=["recall"], ks=[10], matcher=EvidenceMatcher("locator_and_text", 0.8)
        ),
        AnswerExactMatch(),
        AnswerTokenF1(),
        AnswerContains(target="answer"),
        AnswerContains(target="context", k=10),
        AnswerNumericMatch(),
    ]
    total = 0.0
    print(f"{'metric':<28} ms per 1,000 cases ({args.results} results per case)")
    for evaluator in evaluators:
        seconds = asyncio.run(time_evaluator(evaluator, pairs))
        total += seconds
        label = evaluator.name
        if getattr(evaluator, "matcher", None) is not None and evaluator.matcher.mode != "auto":
            label += f" [{evaluator.matcher.mode}]"
        print(f"{label:<28} {seconds / args.cases * 1000 * 1000:10.1f}")
    print(f"{'all of the above':<28} {total / args.cases * 1000 * 1000:10.1f}")


if __name__ == "__main__":
    main()
