"""`heta-eval-compare`: paired tests checked against direct computations, on real SciFact runs,
synthetic reports with known answers, and real MLflow sweeps (a recipe sweep of bm25,
bm25_fusion and hybrid compared from its parent run)."""

from __future__ import annotations

import asyncio
import html
import itertools
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from heta_eval import BenchmarkRunner, EvaluationReport, KnowledgeRecipe, RunnerSettings
from heta_eval.benchmarks import BeirBenchmark
from heta_eval.cli.compare import main
from heta_eval.compare import (
    MCNEMAR,
    RANDOMIZATION,
    CompareError,
    compare_reports,
    load_reports,
    randomization_test,
    write_outputs,
)
from heta_eval.compare.labels import differing_labels, split_overrides
from heta_eval.compare.render import pairing_lines
from heta_eval.evaluators.statistics import bootstrap_ci
from heta_eval.evaluators.summary import summarize
from heta_eval.records import BenchmarkManifest, EvaluationCaseResult, EvaluationScore, RunFacts

from .conftest import CliRunner, job_logs, load_recipe, user_env

UNDETERMINED = "?"


def _compare_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = user_env()
    env["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    return subprocess.run(
        [sys.executable, "-m", "heta_eval.cli.compare", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _score(name: str, value: float | str | None) -> EvaluationScore:
    if value == UNDETERMINED:
        return EvaluationScore(name=name, value=None, undetermined=True)
    if value is None:
        return EvaluationScore(name=name, value=None, skipped_reason="does not apply")
    return EvaluationScore(name=name, value=float(value))


def modes_report(
    name: str,
    by_mode: dict[str, dict[str, list]],
    case_ids: list[str] | None = None,
    primary: str | None = None,
) -> EvaluationReport:
    """A report over cases c0, c1, … (unit u) with per-case values per query mode and metric;
    the primary mode is `primary`, else the last mode (as for real recipes)."""
    first = next(iter(by_mode.values()))
    n = len(next(iter(first.values())))
    ids = case_ids or [f"c{i}" for i in range(n)]
    results = [
        EvaluationCaseResult(
            case_id=case_id,
            unit_id="u",
            query_mode=mode,
            query=f"question {case_id}",
            scores=tuple(_score(m, values[i]) for m, values in metrics.items()),
        )
        for mode, metrics in by_mode.items()
        for i, case_id in enumerate(ids)
    ]
    names = list(dict.fromkeys(m for metrics in by_mode.values() for m in metrics))
    summary, details = summarize(results, list(by_mode), names)
    now = datetime.now(UTC)
    manifest: dict = {"name": name}
    if primary:
        manifest["metadata"] = {"primary_query_mode": primary}
    return EvaluationReport(
        report_id=name,
        benchmark=BenchmarkManifest(name="synthetic"),
        knowledge_base_name=f"synthetic-{name}",
        knowledge_base_manifests=(),
        recipe_manifest=manifest,
        query_modes=tuple(by_mode),
        score_summary=summary,
        score_details=details,
        case_results=tuple(results),
        started_at=now,
        finished_at=now,
        run=RunFacts(
            top_k=10,
            evaluators=tuple(names),
            cases={"total": n, "evaluated": n, "failed": 0, "scored": n},
        ),
    )


def synthetic_report(
    name: str, metrics: dict[str, list], case_ids: list[str] | None = None
) -> EvaluationReport:
    """A report over cases c0, c1, … (unit u, mode bm25) with the given per-case values."""
    return modes_report(name, {"bm25": metrics}, case_ids)


def direct_holm(pvalues: list[float]) -> list[float]:
    m = len(pvalues)
    order = np.argsort(pvalues, kind="stable")
    adjusted = np.minimum(1.0, (m - np.arange(m)) * np.asarray(pvalues)[order])
    adjusted = np.maximum.accumulate(adjusted)
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()


# --- synthetic reports: known answers, fast ------------------------------------------------


def _binary_pair() -> tuple[EvaluationReport, EvaluationReport]:
    # 7 cases the baseline gets and the other misses (b), 2 the other way round (c),
    # 10 both get, 8 neither gets; then one case skipped by the other run and one
    # undetermined in the baseline (both excluded from the pairs).
    base = [1] * 7 + [0] * 2 + [1] * 10 + [0] * 8 + [1, UNDETERMINED]
    other = [0] * 7 + [1] * 2 + [1] * 10 + [0] * 8 + [None, 1]
    rng = np.random.default_rng(7)
    graded_base = rng.random(len(base)).round(3).tolist()
    graded_other = (np.asarray(graded_base) + rng.normal(0.05, 0.1, len(base))).round(3)
    return (
        synthetic_report("a", {"hit@1": base, "ndcg@10": graded_base}),
        synthetic_report("b", {"hit@1": other, "ndcg@10": graded_other.tolist()}),
    )


def test_mcnemar_on_binary_scores_uses_the_discordant_pairs() -> None:
    a, b = _binary_pair()
    comparison = compare_reports([a, b])
    assert comparison.baseline == "a #0" and comparison.cases == 29
    hit = comparison.row("bm25.hit@1").test("b #1")
    assert hit.baseline == "a #0" and (hit.run_mode, hit.baseline_mode) == ("bm25", "bm25")
    assert hit.test == MCNEMAR
    assert hit.p_value == pytest.approx(binomtest(7, 9, 0.5).pvalue, rel=1e-12)
    assert (hit.wins, hit.losses, hit.ties) == (2, 7, 18)
    assert hit.paired == 27 and hit.excluded == 2
    assert hit.difference == pytest.approx((2 - 7) / 27)
    baseline = comparison.row("bm25.hit@1").mean("a #0")
    assert baseline.mean == pytest.approx(a.score_summary["bm25.hit@1"]) and baseline.scored == 28
    assert len(comparison.row("bm25.hit@1").tests) == 1  # the baseline is not tested
    graded = comparison.row("bm25.ndcg@10").test("b #1")
    assert graded.test == RANDOMIZATION and graded.paired == 29 and graded.excluded == 0
    # The difference's CI is the seeded percentile bootstrap of the paired differences,
    # taken in the order of the cases' keys.
    x, y = ({r.case_id: r.score("ndcg@10") for r in run.case_results} for run in (a, b))
    diffs = [y[k] - x[k] for k in sorted(x)]
    assert (graded.ci_low, graded.ci_high) == pytest.approx(bootstrap_ci(diffs, 10_000, 0.95, 0))
    assert graded.ci_low < graded.difference < graded.ci_high


def test_randomization_p_value_matches_the_exact_permutation_distribution() -> None:
    diffs = np.array([0.3, -0.1, 0.25, 0.4, 0.0, 0.15, -0.2, 0.35, 0.05, 0.1, -0.05, 0.2])
    observed = abs(diffs.mean())
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(diffs))))
    exact = float(np.mean(np.abs(signs @ diffs / len(diffs)) >= observed - 1e-12))
    estimate = randomization_test(diffs, resamples=200_000, seed=3)
    assert estimate == pytest.approx(exact, abs=0.01)
    assert randomization_test(diffs, 1000, seed=3) == randomization_test(diffs, 1000, seed=3)
    assert randomization_test(np.zeros(5), 1000, seed=0) == 1.0
    # Every flip as extreme as the observed one (a single case): p = 1 exactly.
    assert randomization_test([0.5], 999, seed=0) == 1.0


def test_holm_is_taken_over_every_comparison_of_the_table() -> None:
    a, b = _binary_pair()
    c = synthetic_report("c", {"hit@1": [1] * 29, "ndcg@10": [0.5] * 29})
    comparison = compare_reports([a, b, c], baseline="b #1", resamples=2000)
    assert [r.label for r in comparison.runs] == ["a #0", "b #1", "c #2"]
    tests = [t for row in comparison.rows for t in row.tests if t.p_value is not None]
    assert comparison.comparisons == len(tests) == 4
    assert {t.baseline for t in tests} == {"b #1"}
    raw = [t.p_value for t in tests]
    assert [t.p_holm for t in tests] == pytest.approx(direct_holm(raw))
    ranked = sorted(tests, key=lambda t: t.p_value)
    assert all(x.p_holm <= y.p_holm for x, y in itertools.pairwise(ranked))
    assert all(t.significant == (t.p_holm < 0.05) for t in tests)


def test_all_pairs_are_tested_with_holm_over_every_pair_and_metric() -> None:
    rng = np.random.default_rng(11)
    base = rng.random(40)
    runs = [
        synthetic_report(name, {"ndcg@10": (base + shift).tolist(), "hit@1": hits})
        for name, shift, hits in (
            ("a", 0.0, [1] * 30 + [0] * 10),
            ("b", 0.05, [1] * 20 + [0] * 20),
            ("c", -0.02, [1] * 35 + [0] * 5),
        )
    ]
    comparison = compare_reports(runs, baseline=None, resamples=2000)
    assert comparison.all_pairs and comparison.baseline is None
    pairs = [(t.run, t.baseline) for t in comparison.row("bm25.ndcg@10").tests]
    assert pairs == [("b #1", "a #0"), ("c #2", "a #0"), ("c #2", "b #1")]
    tests = [t for row in comparison.rows for t in row.tests]
    assert comparison.comparisons == len(tests) == 6
    assert [t.p_holm for t in tests] == pytest.approx(direct_holm([t.p_value for t in tests]))
    by_name = {r.report_id: r for r in runs}
    for test in comparison.row("bm25.ndcg@10").tests:
        x = [c.score("ndcg@10") for c in by_name[test.baseline[0]].case_results]
        y = [c.score("ndcg@10") for c in by_name[test.run[0]].case_results]
        assert test.difference == pytest.approx(np.mean(np.subtract(y, x)), abs=1e-12)
    assert "Every pair of runs is tested" in "\n".join(pairing_lines(comparison))


def _bm25_and_fusion() -> tuple[EvaluationReport, EvaluationReport, dict[str, list[float]]]:
    rng = np.random.default_rng(5)
    values = {name: rng.random(30).round(4).tolist() for name in ("x", "y", "e", "z")}
    bm25 = modes_report("bm25", {"bm25": {"ndcg@10": values["x"], "recall@100": values["x"]}})
    fusion = modes_report(
        "bm25_fusion",
        {
            "bm25": {"ndcg@10": values["y"], "recall@100": values["y"]},
            "bm25_exact": {"ndcg@10": values["e"], "hit@1": [1] * 30},
            "fusion": {"ndcg@10": values["z"], "recall@100": values["z"]},
        },
    )
    return bm25, fusion, values


def test_runs_of_different_query_modes_pair_under_their_primary_modes() -> None:
    bm25, fusion, values = _bm25_and_fusion()
    assert fusion.primary_query_mode == "fusion"
    comparison = compare_reports([bm25, fusion], resamples=500)
    assert comparison.metrics == ("ndcg@10", "recall@100")
    row = comparison.row("ndcg@10")
    assert row.modes == ("bm25", "fusion")
    test = row.test("bm25_fusion #1")
    assert (test.run_mode, test.baseline_mode) == ("fusion", "bm25")
    diffs = np.subtract(values["z"], values["x"])
    assert test.difference == pytest.approx(diffs.mean(), abs=1e-12)
    assert (test.wins, test.losses) == (int(np.sum(diffs > 0)), int(np.sum(diffs < 0)))
    assert row.mean("bm25_fusion #1").mean == pytest.approx(np.mean(values["z"]))
    assert row.mean("bm25_fusion #1").query_mode == "fusion"
    lines = pairing_lines(comparison)
    assert "bm25 #0: query mode bm25 (its primary mode)" in lines
    assert "bm25_fusion #1: query mode fusion (its primary mode)" in lines

    # A mode every run has, named once; then one mode per run, in the runs' order.
    same = compare_reports([bm25, fusion], metrics=["bm25.ndcg@10"], resamples=500)
    assert same.metrics == ("bm25.ndcg@10",) and same.rows[0].modes == ("bm25", "bm25")
    assert same.rows[0].tests[0].difference == pytest.approx(
        np.mean(np.subtract(values["y"], values["x"])), abs=1e-12
    )
    per_run = compare_reports(
        [bm25, fusion], metrics=["bm25.ndcg@10:bm25_exact.ndcg@10", "ndcg_at_10"], resamples=500
    )
    assert per_run.metrics == ("bm25.ndcg@10:bm25_exact.ndcg@10", "ndcg@10")
    assert per_run.rows[0].modes == ("bm25", "bm25_exact")
    assert per_run.rows[0].tests[0].difference == pytest.approx(
        np.mean(np.subtract(values["e"], values["x"])), abs=1e-12
    )

    with pytest.raises(CompareError) as refused:
        compare_reports([bm25, fusion], metrics=["fusion.ndcg@10"])
    assert str(refused.value) == (
        "run 'bm25 #0' has no fusion.ndcg@10 (its query modes: bm25); name a mode per run, "
        "e.g. --metrics bm25.ndcg@10:fusion.ndcg@10"
    )
    with pytest.raises(CompareError, match=r"names 3 run\(s\) but 2 are compared"):
        compare_reports([bm25, fusion], metrics=["ndcg@10:fusion.ndcg@10:bm25.ndcg@10"])
    with pytest.raises(CompareError, match=r"pairs different metrics \(ndcg@10, recall@100\)"):
        compare_reports([bm25, fusion], metrics=["bm25.ndcg@10:fusion.recall@100"])
    with pytest.raises(CompareError, match=r"run 'bm25 #0' has no metric 'hit@1' \(it has "):
        compare_reports([bm25, fusion], metrics=["hit@1:bm25_exact.hit@1"])
    with pytest.raises(CompareError) as unknown:
        compare_reports([bm25, fusion], metrics=["mrr@10"])
    assert (
        "unknown metric 'mrr@10' (metrics every run has under its primary query mode: "
        "ndcg@10, recall@100;" in str(unknown.value)
    )


def test_cases_of_one_run_only_are_left_out_and_reported() -> None:
    rng = np.random.default_rng(3)
    values = rng.random(20).round(3).tolist()
    a = synthetic_report("a", {"ndcg@10": values[:10]}, [f"c{i:02d}" for i in range(10)])
    b = synthetic_report("b", {"ndcg@10": values[10:]}, [f"c{i:02d}" for i in range(1, 11)])
    comparison = compare_reports([a, b], resamples=500)
    assert comparison.cases == 9
    first, second = comparison.runs
    assert (first.cases, first.left_out, first.left_out_examples) == (10, 1, ("u/c00",))
    assert (second.cases, second.left_out, second.left_out_examples) == (10, 1, ("u/c10",))
    # Means and differences are over the 9 shared cases.
    assert comparison.rows[0].mean("a #0").mean == pytest.approx(np.mean(values[1:10]))
    assert comparison.rows[0].mean("b #1").mean == pytest.approx(np.mean(values[10:19]))
    test = comparison.rows[0].tests[0]
    assert test.paired == 9 and test.difference == pytest.approx(
        np.mean(np.subtract(values[10:19], values[1:10]))
    )
    lines = pairing_lines(comparison)
    assert "Cases are paired on (unit, case): 9 case(s) are in every run." in lines
    assert (
        "a #0: query mode bm25 (its primary mode); 1 of its 10 cases are not in every "
        "run and are left out (e.g. u/c00)" in lines
    )

    half = synthetic_report("h", {"ndcg@10": values[:10]}, [f"c{i:02d}" for i in range(5, 15)])
    assert compare_reports([a, half], resamples=200).cases == 5  # 50%: the default threshold
    with pytest.raises(CompareError) as refused:
        compare_reports([a, half], min_overlap=0.6)
    assert str(refused.value) == (
        "only 5 of the 10 cases of run 'a #0' are in every compared run (50%, below "
        "--min-overlap 0.6); 5 would be left out (e.g. u/c00, u/c01, u/c02) — compare runs of "
        "the same benchmark, split and limit, or lower --min-overlap to compare on the 5 "
        "shared cases"
    )
    apart = synthetic_report("z", {"ndcg@10": values[:3]}, ["x1", "x2", "x3"])
    with pytest.raises(CompareError, match=r"run 'a #0' shares no case with the other runs"):
        compare_reports([a, apart], min_overlap=0)
    with pytest.raises(CompareError, match="need at least two runs to compare, got 1"):
        compare_reports([a])


def test_labels_name_the_overrides_that_differ() -> None:
    assert split_overrides("recipe=bm25 runner.query_modes=[bm25, fusion]  x='a b'") == [
        "recipe=bm25",
        "runner.query_modes=[bm25, fusion]",
        "x='a b'",
    ]
    # Where things go (paths, tracking, hydra) is never what differs.
    assert differing_labels(
        [["recipe=bm25", "paths.root=/a"], ["recipe=bm25_fusion", "paths.root=/b"]], [{}, {}]
    ) == ["recipe=bm25", "recipe=bm25_fusion"]
    # A run without the override shows its config value (a group by its name).
    assert differing_labels(
        [["recipe=bm25_fusion", "recipe.chunk_size=64"], []],
        [
            {"recipe.name": "bm25_fusion", "recipe.chunk_size": "64"},
            {"recipe.name": "bm25", "recipe.chunk_size": "null"},
        ],
    ) == [
        "recipe=bm25_fusion recipe.chunk_size=64",
        "recipe=bm25 recipe.chunk_size=null",
    ]
    # Same overrides (or none): the result-shaping config values that differ.
    assert differing_labels(
        [[], []],
        [
            {"recipe.indexes.bm25.k1": "1.2", "paths.root": "/a", "recipe.description": "x"},
            {"recipe.indexes.bm25.k1": "0.5", "paths.root": "/b", "recipe.description": "y"},
        ],
    ) == ["recipe.indexes.bm25.k1=1.2", "recipe.indexes.bm25.k1=0.5"]
    assert differing_labels([["recipe=bm25"], ["recipe=bm25"]], [{}, {}]) is None


def test_outputs_hold_the_tables_plots_and_every_number(tmp_path: Path) -> None:
    comparison = compare_reports(list(_binary_pair()), resamples=2000)
    paths = write_outputs(comparison, tmp_path / "out")
    assert {p.name for p in paths.values()} == {
        "comparison.md",
        "comparison.html",
        "comparison.json",
    }
    markdown = paths["markdown"].read_text()
    assert "| run | query mode | bm25.hit@1 | bm25.ndcg@10 |" in markdown
    assert "| a #0 (baseline) | bm25 | 0.6429 [" in markdown
    assert "| bm25.hit@1 | b #1 [bm25] | a #0 [bm25] | -0.1852 |" in markdown
    assert "(McNemar)" in markdown and "(randomization)" in markdown
    page = paths["html"].read_text()
    assert page.count('src="data:image/png;base64,') == 2 and "http" not in page
    numbers = json.loads(paths["json"].read_text())
    assert numbers["baseline"] == "a #0" and numbers["metrics"] == ["bm25.hit@1", "bm25.ndcg@10"]
    assert numbers["rows"][0]["tests"][0]["p_value"] == comparison.rows[0].tests[0].p_value


def test_plot_text_stays_inside_the_figure() -> None:
    """Titles and tick labels of every plot are drawn inside the image, also with six runs
    of long labels tested in every pair."""
    from matplotlib.text import Text

    from heta_eval.compare.plots import metric_figure

    rng = np.random.default_rng(2)
    base = rng.random(25)
    runs = [
        synthetic_report(
            f"recipe=bm25_fusion recipe.chunk_size={size} recipe.indexes.bm25.k1={k1}",
            {"ndcg@10": np.clip(base + rng.normal(0, 0.05, 25), 0, 1).tolist()},
        )
        for size, k1 in itertools.product((64, 128, 256), (0.9, 1.2))
    ]
    for baseline in (0, None):
        comparison = compare_reports(runs, baseline=baseline, resamples=200)
        fig = metric_figure(comparison, comparison.rows[0])
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        # Each panel with its title and tick labels as drawn, and the figure's title.
        boxes = [ax.get_tightbbox(renderer) for ax in fig.axes]
        (title,) = [t for t in fig.findobj(Text) if t.get_text() == comparison.rows[0].metric]
        boxes.append(title.get_window_extent(renderer))
        assert len(fig.axes) == 2 and all(ax.get_title(loc="left") for ax in fig.axes)
        assert len(fig.axes[0].get_yticklabels()) == (5 if baseline == 0 else 15)
        for box in boxes:
            assert fig.bbox.x0 - 1 <= box.x0 and box.x1 <= fig.bbox.x1 + 1, box
            assert fig.bbox.y0 - 1 <= box.y0 and box.y1 <= fig.bbox.y1 + 1, box


CHROMIUM = Path("/usr/bin/chromium")
# Appended to a copy of the page: Chromium writes what the page measures into its title.
MEASURE = """<script>
const view = document.documentElement.clientWidth;
const boxes = [...document.querySelectorAll('.scroll')].map(b => ({
  right: b.getBoundingClientRect().right, scroll: b.scrollWidth, client: b.clientWidth}));
const images = [...document.querySelectorAll('img')].map(i => ({
  right: i.getBoundingClientRect().right, width: i.width, natural: i.naturalWidth}));
document.title = JSON.stringify({view, page: document.documentElement.scrollWidth, boxes, images});
</script>"""


def _chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--window-size=1280,1100",
            "--virtual-time-budget=15000",
            *args,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"headless Chromium not installed ({CHROMIUM})")
@pytest.mark.parametrize("count", [2, 6])
def test_comparison_html_fits_1280_pixels_in_chromium(count: int, tmp_path: Path) -> None:
    """With 2 and with 6 runs of long labels, the page does not scroll sideways at 1,280 px:
    tables wrap within their boxes and plots shrink to the width."""
    import re

    from PIL import Image

    rng = np.random.default_rng(count)
    base = rng.random(30)
    runs = [
        synthetic_report(
            f"recipe=bm25_fusion recipe.chunk_size={64 * (i + 1)} recipe.indexes.bm25.k1=1.{i}",
            {
                "ndcg@10": np.clip(base + rng.normal(0.01 * i, 0.05, 30), 0, 1).tolist(),
                "evidence_recall@5": rng.integers(0, 2, 30).tolist(),
                "context_has_answer@5": rng.integers(0, 2, 30).tolist(),
                "recall@100": np.clip(base + rng.normal(0, 0.1, 30), 0, 1).tolist(),
            },
        )
        for i in range(count)
    ]
    page = write_outputs(compare_reports(runs, resamples=500), tmp_path / "out")["html"]
    measured = tmp_path / "measured.html"
    measured.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    proc = _chromium(measured, tmp_path / "profile-dom", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r"<title>(.*?)</title>", proc.stdout, re.S)
    assert found, proc.stdout[:2000]
    layout = json.loads(html.unescape(found.group(1)))
    assert layout["view"] <= 1280 and layout["page"] <= layout["view"], layout
    assert len(layout["boxes"]) == 2 and len(layout["images"]) == 4
    for box in layout["boxes"]:
        assert box["right"] <= layout["view"] and box["scroll"] <= box["client"], layout
    for image in layout["images"]:
        assert image["right"] <= layout["view"] and image["width"] <= image["natural"], layout

    png = tmp_path / f"compare-{count}.png"
    proc = _chromium(page, tmp_path / "profile-png", f"--screenshot={png}")
    assert proc.returncode == 0 and png.is_file(), proc.stderr[-2000:]
    image = Image.open(png).convert("RGB")
    assert image.size == (1280, 1100)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text and table borders, not a blank page


def test_cli_errors_are_one_line_and_the_baseline_can_be_chosen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _binary_pair()
    first = a.write_json(tmp_path / "a" / "report.json")
    b.write_json(tmp_path / "b" / "report.json")

    def fails(*args: str) -> str:
        with pytest.raises(SystemExit) as exited:
            main([*args, "--out", str(tmp_path / "out")])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        return err

    assert "no such report: nowhere.json" in fails("nowhere.json", str(first))
    assert "need at least two runs to compare, got 1" in fails(str(first))
    assert "unknown metric 'recall@5'" in fails(
        str(first), str(tmp_path / "b"), "--metrics", "recall@5"
    )
    assert "--all-pairs tests every pair; it takes no --baseline" in fails(
        str(first), str(tmp_path / "b"), "--all-pairs", "--baseline", "1"
    )
    assert "--min-overlap must be within [0, 1], got 1.5" in fails(
        str(first), str(tmp_path / "b"), "--min-overlap", "1.5"
    )
    assert "baseline 'recipe=bm25' is none of the runs ('a (a)', 'b (b)')" in fails(
        str(first), str(tmp_path / "b"), "--baseline", "recipe=bm25"
    )
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    assert "no MLflow store at" in fails(str(first), "0" * 32, "--tracking-uri", missing)

    def succeeds(*args: str) -> tuple[str, dict]:
        with pytest.raises(SystemExit) as exited:
            main([*args, "--out", str(tmp_path / "out"), "--resamples", "500"])
        assert exited.value.code == 0
        return capsys.readouterr().out, json.loads(
            (tmp_path / "out" / "comparison.json").read_text()
        )

    out, numbers = succeeds(str(tmp_path / "a"), str(tmp_path / "b"))
    assert "a (a) (baseline)" in out and "McNemar" in out
    assert f"html: {tmp_path / 'out' / 'comparison.html'}" in out
    assert numbers["baseline"] == "a (a)" and numbers["resamples"] == 500
    for baseline in ("1", str(tmp_path / "b"), "b (b)"):
        _, numbers = succeeds(str(first), str(tmp_path / "b"), "--baseline", baseline)
        assert numbers["baseline"] == "b (b)"
        assert [r["label"] for r in numbers["runs"]] == ["a (a)", "b (b)"]
    _, numbers = succeeds(str(first), str(first), "--metrics", "hit_at_1")
    assert [r["label"] for r in numbers["runs"]] == ["a (a) #1", "a (a) #2"]
    (test,) = numbers["rows"][0]["tests"]
    assert numbers["metrics"] == ["bm25.hit@1"] and test["p_value"] == 1.0
    assert test["difference"] == 0 and test["ties"] == 28 and test["excluded"] == 1
    _, numbers = succeeds(str(first), str(tmp_path / "b"), "--all-pairs")
    assert numbers["all_pairs"] and numbers["baseline"] is None


def test_importing_compare_loads_no_mlflow_scipy_or_matplotlib() -> None:
    heavy = "{'mlflow', 'scipy', 'matplotlib'}"
    code = f"import sys, heta_eval.cli.compare; print(sorted({heavy} & set(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


# --- two real SciFact runs: BM25 k1=1.2 against k1=0.5 -------------------------------------


def _scifact_run(scifact_dir: Path, out: Path, k1: float) -> Path:
    spec = load_recipe().model_dump()
    spec["indexes"]["bm25"]["k1"] = k1
    bench = BeirBenchmark(dataset="scifact", data_root=scifact_dir)
    runner = BenchmarkRunner(
        benchmark=bench,
        recipe=KnowledgeRecipe.model_validate(spec),
        evaluators=bench.evaluators(),
        settings=RunnerSettings(output_dir=out, store_dir=out.parent / "store"),
    )
    return asyncio.run(runner.run()).write_json(out / "report.json")


@pytest.fixture(scope="module")
def scifact_reports(
    scifact_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("compare")
    return (
        _scifact_run(scifact_dir, tmp / "k1_1.2", 1.2),
        _scifact_run(scifact_dir, tmp / "k1_0.5", 0.5),
    )


def _values(report: EvaluationReport, metric: str) -> dict[tuple[str, str, str], float | None]:
    mode, _, name = metric.partition(".")
    return {
        (r.unit_id, r.case_id, r.query_mode): r.score(name)
        for r in report.case_results
        if r.query_mode == mode
    }


@pytest.mark.slow
def test_scifact_comparison_agrees_with_direct_computation(
    scifact_reports: tuple[Path, Path],
) -> None:
    runs = load_reports([str(p) for p in scifact_reports])
    assert [r.label for r in runs] == ["bm25 (k1_1.2)", "bm25 (k1_0.5)"]
    base, other = (r.report for r in runs)
    comparison = compare_reports(runs, resamples=20_000, seed=0)
    assert comparison.cases == 300
    assert set(comparison.metrics) == set(base.score_summary)
    for row in comparison.rows:
        first, second = row.cell(runs[0].label), row.cell(runs[1].label)
        assert first.mean == pytest.approx(base.score_summary[row.metric], abs=1e-12)
        assert second.mean == pytest.approx(other.score_summary[row.metric], abs=1e-12)
        x, y = _values(base, row.metric), _values(other, row.metric)
        diffs = np.array([y[k] - x[k] for k in sorted(x)])
        assert second.paired == 300 and second.excluded == 0
        assert second.difference == pytest.approx(diffs.mean(), abs=1e-12)
        assert (second.wins, second.losses, second.ties) == (
            int(np.sum(diffs > 0)),
            int(np.sum(diffs < 0)),
            int(np.sum(diffs == 0)),
        )
        binary = all(v in (0.0, 1.0) for v in [*x.values(), *y.values()])
        assert second.test == (MCNEMAR if binary else RANDOMIZATION)
        # An independent Monte Carlo estimate: other seed, other sign draws, 10x resamples.
        signs = np.random.default_rng(12345).choice([-1.0, 1.0], size=(200_000, len(diffs)))
        extreme = np.abs((signs * diffs).mean(axis=1)) >= abs(diffs.mean()) - 1e-12
        independent = (extreme.sum() + 1) / (len(signs) + 1)
        assert second.p_value == pytest.approx(independent, abs=0.01)
    tested = [row.cell(runs[1].label) for row in comparison.rows]
    assert [c.p_holm for c in tested] == pytest.approx(direct_holm([c.p_value for c in tested]))
    ranked = sorted(tested, key=lambda c: c.p_value)
    assert all(a.p_holm <= b.p_holm for a, b in itertools.pairwise(ranked))
    assert any(0.1 < c.p_value < 0.9 for c in tested)  # the ±0.01 check above is not vacuous


@pytest.mark.slow
def test_cli_compares_two_report_files(scifact_reports: tuple[Path, Path], tmp_path: Path) -> None:
    proc = _compare_cli(
        *(str(p) for p in scifact_reports), "--out", str(tmp_path / "cmp"), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "bm25 (k1_1.2) (baseline)" in proc.stdout and "bm25.ndcg@10" in proc.stdout
    assert "Holm" in proc.stdout and "randomization" in proc.stdout
    for name in ("comparison.md", "comparison.html", "comparison.json"):
        assert f"{tmp_path / 'cmp' / name}" in proc.stdout
    page = (tmp_path / "cmp" / "comparison.html").read_text()
    numbers = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert page.count('src="data:image/png;base64,') == len(numbers["metrics"]) == 5
    assert '<table id="comparison">' in page and "bm25.recall@100" in page
    cell = numbers["rows"][0]["cells"][1]
    assert 0 < cell["p_value"] <= 1 and cell["test"] == RANDOMIZATION
    assert "| bm25.ndcg@10 |" in (tmp_path / "cmp" / "comparison.md").read_text()


# --- a real MLflow recipe sweep: bm25, bm25_fusion and hybrid on a subset of the sample -----


def _reports(client: object, runs: list, dest: Path) -> dict[str, EvaluationReport]:
    """Each run's report.json artifact, read back from MLflow, by recipe name."""
    found = {}
    for run in runs:
        local = client.download_artifacts(run.info.run_id, "report.json", str(dest))  # type: ignore[attr-defined]
        report = EvaluationReport.read_json(Path(local))
        found[str(report.recipe_manifest["name"])] = report
    return found


def _by_case(report: EvaluationReport, mode: str, metric: str) -> dict[tuple[str, str], float]:
    return {
        (r.unit_id, r.case_id): r.score(metric)
        for r in report.case_results
        if r.query_mode == mode and r.score(metric) is not None
    }


def test_a_recipe_sweep_compares_from_its_parent_run_with_the_baseline_named(
    run_cli: CliRunner, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlflow import MlflowClient

    sweep = run_cli("-m", "recipe=bm25,bm25_fusion,hybrid", "runner.limit=12", timeout=900)
    assert sweep.returncode == 0, sweep.stderr[-3000:] + job_logs(tmp_path / "outputs")
    uri = f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("heta_eval").experiment_id
    runs = client.search_runs([experiment], order_by=["attributes.start_time ASC"])
    (parent,) = [r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    reports = _reports(client, children, tmp_path / "artifacts")
    assert set(reports) == {"bm25", "bm25_fusion", "hybrid"}

    # One command from the parent id, with the baseline named by its override.
    cmp = tmp_path / "cmp"
    proc = _compare_cli(
        parent.info.run_id,
        "--baseline",
        "recipe=bm25",
        "--tracking-uri",
        uri,
        "--out",
        str(cmp),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "3 runs · 12 paired cases · baseline recipe=bm25" in proc.stdout
    assert "recipe=bm25_fusion: query mode fusion (its primary mode)" in proc.stdout
    assert "recipe=hybrid: query mode hybrid (its primary mode)" in proc.stdout
    assert "Downloading artifacts" not in proc.stderr
    numbers = json.loads((cmp / "comparison.json").read_text())
    assert [r["run_id"] for r in numbers["runs"]] == [r.info.run_id for r in children]
    labels = [r["label"] for r in numbers["runs"]]
    assert sorted(labels) == ["recipe=bm25", "recipe=bm25_fusion", "recipe=hybrid"]
    assert numbers["baseline"] == "recipe=bm25" and numbers["cases"] == 12
    assert "ndcg@10" in numbers["metrics"] and numbers["comparisons"] == 2 * len(numbers["metrics"])
    modes = {"recipe=bm25": "bm25", "recipe=bm25_fusion": "fusion", "recipe=hybrid": "hybrid"}
    (ndcg,) = [row for row in numbers["rows"] if row["metric"] == "ndcg@10"]
    assert ndcg["modes"] == [modes[label] for label in labels]
    base = _by_case(reports["bm25"], "bm25", "ndcg@10")
    for test in ndcg["tests"]:
        assert test["baseline"] == "recipe=bm25" and test["baseline_mode"] == "bm25"
        mode = modes[test["run"]]
        other = _by_case(reports[test["run"].removeprefix("recipe=")], mode, "ndcg@10")
        assert test["run_mode"] == mode and set(other) == set(base)
        diffs = np.array([other[k] - base[k] for k in sorted(base)])
        assert test["paired"] == 12 and test["difference"] == pytest.approx(diffs.mean())
        assert test["wins"] == int(np.sum(diffs > 0)) and test["losses"] == int(np.sum(diffs < 0))
    for mean in ndcg["means"]:
        report = reports[mean["run"].removeprefix("recipe=")]
        assert mean["mean"] == pytest.approx(report.score_summary[f"{mean['query_mode']}.ndcg@10"])
    assert f"logged to MLflow sweep run {parent.info.run_id}" in proc.stdout
    logged = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"comparison.md", "comparison.html", "comparison.json"} <= logged

    # Every run has a bm25 mode: all pairs under it. bm25_fusion's bm25 index is bm25's.
    proc = _compare_cli(
        parent.info.run_id,
        "--metrics",
        "bm25.ndcg@10",
        "--all-pairs",
        "--no-log-to-mlflow",
        "--tracking-uri",
        uri,
        "--out",
        str(tmp_path / "pairs"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    numbers = json.loads((tmp_path / "pairs" / "comparison.json").read_text())
    (row,) = numbers["rows"]
    assert numbers["metrics"] == ["bm25.ndcg@10"] and row["modes"] == ["bm25"] * 3
    assert numbers["all_pairs"] and numbers["comparisons"] == len(row["tests"]) == 3
    (same,) = [t for t in row["tests"] if {t["run"], t["baseline"]} == set(labels[:2])]
    assert same["difference"] == 0 and same["ties"] == 12 and same["p_value"] == 1.0

    # Two child run ids, with a mode named per run.
    by_label = dict(zip(labels, (r.info.run_id for r in children), strict=True))
    proc = _compare_cli(
        by_label["recipe=bm25"],
        by_label["recipe=bm25_fusion"],
        "--metrics",
        "bm25.ndcg@10:bm25_exact.ndcg@10",
        "--tracking-uri",
        uri,
        "--out",
        str(tmp_path / "two"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    numbers = json.loads((tmp_path / "two" / "comparison.json").read_text())
    assert numbers["metrics"] == ["bm25.ndcg@10:bm25_exact.ndcg@10"]
    assert numbers["rows"][0]["modes"] == ["bm25", "bm25_exact"]
    assert [r["label"] for r in numbers["runs"]] == ["recipe=bm25", "recipe=bm25_fusion"]

    # Run directories by path: labels from the overrides Hydra saved next to each report.
    dirs = {
        d.parent.name: d.parent
        for d in (tmp_path / "outputs" / "multiruns").glob("*/*/*/report.json")
    }
    hybrid_dir = next(
        d for d in dirs.values() if "recipe=hybrid" in (d / ".hydra" / "overrides.yaml").read_text()
    )
    # A full run against the hybrid subset: 12 of its 48 cases are shared.
    full = run_cli("recipe=bm25", "tracking=none")
    assert full.returncode == 0, full.stderr[-3000:]
    (full_dir,) = [p.parent for p in (tmp_path / "outputs" / "runs").glob("*/*/report.json")]
    proc = _compare_cli(str(full_dir), str(hybrid_dir), "--out", str(tmp_path / "x"), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        "heta-eval-compare: only 12 of the 48 cases of run 'recipe=bm25 runner.limit=null' are "
        "in every compared run (25%, below --min-overlap 0.5); 36 would be left out"
    )
    proc = _compare_cli(
        str(full_dir),
        str(hybrid_dir),
        "--min-overlap",
        "0.25",
        "--out",
        str(tmp_path / "sub"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    numbers = json.loads((tmp_path / "sub" / "comparison.json").read_text())
    assert [r["label"] for r in numbers["runs"]] == [
        "recipe=bm25 runner.limit=null",
        "recipe=hybrid runner.limit=12",
    ]
    assert [(r["cases"], r["left_out"]) for r in numbers["runs"]] == [(48, 36), (12, 0)]
    assert numbers["cases"] == 12 and "of its 48 cases are not in every run" in proc.stdout

    # A plain run id is one run; unknown ids and runs without a report are refused.
    bare = client.create_run(experiment, run_name="no report")
    client.set_terminated(bare.info.run_id)
    child = children[0].info.run_id
    for other, message in (
        (bare.info.run_id, f"MLflow run {bare.info.run_id} (no report) has no report.json"),
        ("f" * 32, f"unknown MLflow run id {'f' * 32} in {uri}"),
    ):
        with pytest.raises(SystemExit) as exited:
            main([child, other, "--tracking-uri", uri, "--out", str(tmp_path / "no")])
        err = capsys.readouterr().err
        assert exited.value.code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "no").exists()
