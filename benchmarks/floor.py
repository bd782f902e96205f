"""The floor: BM25 retrieval and scoring done directly with bm25s and pytrec_eval, no harness.

Usage: python benchmarks/floor.py [--data DIR] [--top-k 100] [--json PATH]

On a BEIR-layout directory (SciFact by default): load the files, index the documents
with bm25s (the bm25 recipe's tokenisation and parameters: bm25s Tokenizer, English
PyStemmer stemming and stopwords, k1 1.5, b 0.75, lucene), retrieve the top k for all
judged queries in one batched call, and score nDCG@10, Recall@100, MAP@100, MRR@10 and
P@10 with pytrec_eval (BEIR's conventions: a document with the query's id is ignored).
Libraries are imported before the clock starts, as in the runner measurement.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bm25s
import pytrec_eval
import Stemmer
from _common import (
    BM25_PARAMS,
    BM25_STEMMER,
    BM25_STOPWORDS,
    SCIFACT,
    Stopwatch,
    peak_rss_mb,
    print_table,
    read_beir,
    write_json,
)
from bm25s.tokenization import Tokenizer

MEASURES = {"ndcg_cut.10", "recall.100", "map_cut.100", "P.10"}


def floor(root: Path, top_k: int) -> dict[str, float]:
    """Stage seconds, scores and peak memory of one direct bm25s + pytrec_eval run."""
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    watch = Stopwatch()
    started = time.perf_counter()
    with watch("load"):
        doc_ids, texts, queries, qrels = read_beir(root)
    with watch("index"):
        tokenizer = Tokenizer(stemmer=Stemmer.Stemmer(BM25_STEMMER), stopwords=BM25_STOPWORDS)
        tokens = tokenizer.tokenize(
            texts, update_vocab=True, return_as="tuple", show_progress=False
        )
        retriever = bm25s.BM25(**BM25_PARAMS)
        retriever.index(tokens, show_progress=False)
    # The index in memory: bm25s's sparse score matrix (the runner's BM25Index holds the same).
    index_bytes = sum(getattr(a, "nbytes", 0) for a in retriever.scores.values())
    with watch("query"):
        query_ids = list(queries)
        query_tokens = tokenizer.tokenize(
            [queries[q] for q in query_ids],
            update_vocab=False,
            return_as="ids",
            show_progress=False,
        )
        positions, scores = retriever.retrieve(
            query_tokens, k=min(top_k, len(doc_ids)), show_progress=False
        )
    with watch("score"):
        run: dict[str, dict[str, float]] = {}
        for qid, row_p, row_s in zip(query_ids, positions, scores, strict=True):
            hits = {doc_ids[p]: float(s) for p, s in zip(row_p, row_s, strict=True) if s > 0}
            hits.pop(qid, None)  # BEIR's ignore_identical_ids
            run[qid] = hits
        judged = {q: qrels[q] for q in query_ids}
        per_query = pytrec_eval.RelevanceEvaluator(judged, MEASURES).evaluate(run)
        top10 = {q: dict(sorted(h.items(), key=lambda x: -x[1])[:10]) for q, h in run.items()}
        mrr = pytrec_eval.RelevanceEvaluator(judged, {"recip_rank"}).evaluate(top10)

        def mean(measure: str, table: dict = per_query) -> float:
            # Queries that retrieved nothing count as 0, as in the runner; summed exactly, as
            # the runner's summaries are, so that equal per-query values give an equal mean
            # to the last digit whatever the order (a plain sum of 10k values drifts at 1e-15).
            values = [table.get(q, {}).get(measure, 0.0) for q in query_ids]
            return math.fsum(values) / len(query_ids)

        metrics = {
            "ndcg@10": mean("ndcg_cut_10"),
            "recall@100": mean("recall_100"),
            "map@100": mean("map_cut_100"),
            "mrr@10": mean("recip_rank", mrr),
            "precision@10": mean("P_10"),
        }
    total = time.perf_counter() - started
    return {
        "documents": float(len(doc_ids)),
        "queries": float(len(query_ids)),
        **{f"{k}_s": v for k, v in watch.laps.items()},
        "total_s": total,
        **metrics,
        "index_bytes_per_document": index_bytes / len(doc_ids),
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SCIFACT, help="a BEIR-layout directory")
    parser.add_argument("--top-k", type=int, default=100)
    parser.add_argument("--json", type=Path, default=None, help="write the row here")
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").is_file():
        parser.error(f"no corpus.jsonl in {args.data}")
    row = floor(args.data, args.top_k)
    print_table([row], list(row))
    write_json(args.json, row)


if __name__ == "__main__":
    main()
