"""Compare evaluation runs case by case: paired tests against a baseline (or every pair),
Holm-corrected, each run under its primary query mode unless told otherwise.

runs = load_reports(["outputs/runs/a", "0123...cdef"])   # paths, run ids, sweep parents
comparison = compare_reports(runs, baseline="recipe=bm25")   # None: every pair
write_outputs(comparison, "outputs/comparisons/mine")   # .md, .html (plots), .json
"""

from heta_eval.compare.loading import CompareError, LoadedRun, load_reports
from heta_eval.compare.paired import (
    DEFAULT_MIN_OVERLAP,
    MCNEMAR,
    RANDOMIZATION,
    Comparison,
    MetricRow,
    PairTest,
    RunInfo,
    RunMean,
    compare_reports,
    holm,
    mcnemar_exact,
    randomization_test,
)
from heta_eval.compare.render import rich_table, to_html, to_markdown, write_outputs

__all__ = [
    "DEFAULT_MIN_OVERLAP",
    "MCNEMAR",
    "RANDOMIZATION",
    "CompareError",
    "Comparison",
    "LoadedRun",
    "MetricRow",
    "PairTest",
    "RunInfo",
    "RunMean",
    "compare_reports",
    "holm",
    "load_reports",
    "mcnemar_exact",
    "randomization_test",
    "rich_table",
    "to_html",
    "to_markdown",
    "write_outputs",
]
