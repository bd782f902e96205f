"""A sweep's pieces without a sweep: its id, the best score means and their CI, the rows of
rerun and failed jobs, the callback shipped to launcher workers."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

from heta_eval.results.sweep_rows import (
    SweepRow,
    best_scores,
    differing_overrides,
    headline,
    job_rows,
    merge_job_records,
    score_means,
)
from heta_eval.sweep.callback import MlflowSweepCallback, sweep_id


def test_sweep_id_is_stable_and_order_free() -> None:
    a = sweep_id(["recipe.chunk_size=16,32", "runner.top_k=5"], "config")
    assert a == sweep_id(["runner.top_k=5", "recipe.chunk_size=16,32"], "config")
    assert len(a) == 16 and a != sweep_id(["recipe.chunk_size=16,32"], "config")
    assert a != sweep_id(["recipe.chunk_size=16,32", "runner.top_k=5"], "other")


def test_best_is_only_for_score_means_with_their_own_ci() -> None:
    def row(run_id: str, status: str, job: int, ndcg: float, low: float) -> SweepRow:
        metrics = {
            "bm25.ndcg_at_10": ndcg,
            "ndcg_at_10": ndcg,
            "ndcg_at_10.ci_low": low,
            "ndcg_at_10.ci_high": 1.0,
            **{f"bm25.ndcg_at_10.{stat}": 1.0 for stat in ("std", "ci_low", "ci_high")},
            "bm25.ndcg_at_10.scored": 48,
            "bm25.ndcg_at_10.skipped": 2,
            "bm25.latency_p50_seconds": 0.01 * job,
            "latency_p50_seconds": 0.01 * job,
            "slice/difficulty/easy/bm25.ndcg_at_10": 1.0,
            "kb.chunks": 100.0 * job,
            "cache.response_misses": 48.0,
            "cases.failed": 0.0,
        }
        tags = {"heta_eval.primary_query_mode": "bm25"}
        return SweepRow(run_id, run_id, status, f"x={job}", metrics=metrics, tags=tags, job=job)

    rows = [
        row("r0", "FINISHED", 0, 0.5, 0.2),
        row("r1", "FINISHED", 1, 0.7, 0.6),
        row("r2", "FINISHED", 2, 0.7, 0.1),  # a tie: the earlier job wins
        row("r3", "FAILED", 3, 0.9, 0.8),  # not finished: never best
    ]
    assert score_means(rows[0]) == ["ndcg_at_10", "bm25.ndcg_at_10"]
    best = {b.metric: b for b in best_scores(rows)}
    assert set(best) == {"ndcg_at_10", "bm25.ndcg_at_10"}
    assert (best["ndcg_at_10"].value, best["ndcg_at_10"].row.run_id) == (0.7, "r1")
    # Its own run's bounds, not the largest ci_low of any run (r3's 0.8, r0's 0.2).
    assert (best["ndcg_at_10"].ci_low, best["ndcg_at_10"].ci_high) == (0.6, 1.0)
    assert headline(rows) == "ndcg_at_10"  # nDCG@10 where there is one
    assert headline(rows, "bm25.ndcg@10") == "bm25.ndcg_at_10"  # the search's objective
    assert differing_overrides(rows) == ["x"]


def _run(run_id: str, status: str, overrides: str, start: int) -> SimpleNamespace:
    return SimpleNamespace(
        info=SimpleNamespace(run_id=run_id, run_name=run_id, status=status, start_time=start),
        data=SimpleNamespace(metrics={"m": 1.0}, tags={"heta_eval.overrides": overrides}),
    )


def test_a_rerun_job_counts_once_by_its_latest_finished_run() -> None:
    rows = job_rows(
        [
            _run("old-fail", "FAILED", "x=1", 1),
            _run("ok", "FINISHED", "x=2", 2),
            _run("new-ok", "FINISHED", "x=1", 3),
            _run("still-failing", "FAILED", "x=3", 4),
            _run("fails-again", "FAILED", "x=3", 5),
        ]
    )
    assert [(r.run_id, r.status, r.attempts) for r in rows] == [
        ("ok", "FINISHED", 1),
        ("new-ok", "FINISHED", 2),
        ("fails-again", "FAILED", 2),
    ]


def test_failed_jobs_without_a_run_get_a_row_and_rows_their_job_numbers() -> None:
    rows = [SweepRow("r1", "a", "FINISHED", "x=1"), SweepRow("r2", "b", "FAILED", "x=2")]
    merge_job_records(
        rows,
        [
            {"num": 0, "status": "COMPLETED", "overrides": ["x=1"], "error": None},
            {"num": 1, "status": "FAILED", "overrides": ["x=2"], "error": "E: two"},
            {"num": 2, "status": "FAILED", "overrides": ["x=3"], "error": "E: three"},
        ],
    )
    assert [(r.job, r.run_id, r.status, r.error) for r in rows] == [
        (0, "r1", "FINISHED", None),
        (1, "r2", "FAILED", "E: two"),
        (2, "", "FAILED", "E: three"),
    ]
    assert [r.label for r in rows] == ["#0", "#1", "#2"]


def test_the_callback_ships_to_workers_without_its_client() -> None:
    callback = MlflowSweepCallback()
    callback._tracker = SimpleNamespace(client=lambda: None)  # not picklable
    callback._armed = True
    copy = pickle.loads(pickle.dumps(callback))
    assert copy._tracker is None and copy._armed is False
