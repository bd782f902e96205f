"""report.html: written by a real `heta-eval` run in this process, logged to MLflow,
self-contained, escaped, capped in size, and rendered by headless Chromium into a screenshot
that is not blank."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval.records import EvaluationReport
from heta_eval.reporting import REPORT_HTML, render_html, write_html_report
from heta_eval.reporting.data import WORST_CASES

from ...browser import CHROMIUM, chromium
from ...cli_in_process import call_cli_once
from ..runs import report_path

# Three query modes, an extractive answerer and answer metrics: every section has content.
SAMPLE_RUN = (
    "recipe=bm25_fusion",
    "evaluator=with_answers",
    "recipe.answerer={_target_:heta_eval.kb.ExtractiveAnswerer}",
)


@pytest.fixture(scope="module")
def answered_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, EvaluationReport]:
    """One real run of the sample benchmark: (its run directory, its report)."""
    cwd = tmp_path_factory.mktemp("report-html")
    proc = call_cli_once("heta-eval", [f"paths.root={cwd / 'outputs'}", *SAMPLE_RUN], cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    path = report_path(proc.stdout)
    return path.parent, EvaluationReport.read_json(path)


def test_a_run_writes_report_html_and_logs_it_to_mlflow(
    answered_run: tuple[Path, EvaluationReport], tmp_path: Path
) -> None:
    run_dir, report = answered_run
    page = (run_dir / REPORT_HTML).read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "sample/1/test · recipe bm25_fusion" in page
    assert "fusion (primary)" in page and report.primary_query_mode == "fusion"
    for metric in report.run.evaluators:
        assert f'alt="distribution of {metric}"' in page
    # Each metric's cases below the best value reached, up to 20, lowest first.
    fusion = [r for r in report.case_results if r.query_mode == "fusion"]
    below = sum(1 for r in fusion if r.score("evidence_recall@1") < 1)
    assert 0 < below < WORST_CASES
    assert f"<summary>evidence_recall@1 · {below} lowest</summary>" in page
    assert "<summary>answer_f1 · 20 lowest</summary>" in page
    assert "answer_exact_match: all 48 scored cases reached 0.0000." in page
    for section in ("metrics", "distributions", "latency", "slices", "worst", "kb", "config"):
        assert f'<section id="{section}">' in page
    assert "<td>question_type</td><td>multi_evidence</td><td class='num'>4</td>" in page
    # Nothing is fetched when the page is opened: no scripts, stylesheets or remote URLs.
    assert not re.search(r"<script|<link|@import|(src|href)=\"(https?:)?//|url\(", page)
    # An answerer follows the retrieval: every query of every mode was timed alone.
    latency = page[page.index('<section id="latency">') :]
    latency = latency[: latency.index("</section>")]
    assert latency.count("<td>each query alone</td>") == len(report.query_modes) == 3
    assert "batch(es)" not in latency
    assert {r.latency_batch_size for r in report.case_results} == {1}
    images = re.findall(r'src="data:image/png;base64,[A-Za-z0-9+/=]+"', page)
    assert len(images) == len(report.run.evaluators) + 2  # + summary and latency

    client = MlflowClient(tracking_uri=f"sqlite:///{run_dir.parents[2] / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("heta_eval").experiment_id])
    assert REPORT_HTML in {a.path for a in client.list_artifacts(run.info.run_id)}
    logged = client.download_artifacts(run.info.run_id, REPORT_HTML, str(tmp_path))
    assert Path(logged).read_text(encoding="utf-8") == page


def test_worst_cases_show_the_expected_answer_evidence_and_provenance(
    answered_run: tuple[Path, EvaluationReport],
) -> None:
    run_dir, report = answered_run
    page = (run_dir / REPORT_HTML).read_text(encoding="utf-8")
    worst = next(r for r in report.case_results if r.case_id == "astronomy-q12")
    assert worst.expected is not None and worst.expected.answers == ("Gerard Kuiper", "Kuiper")
    # The case result carries what the case expected (answers and evidence), in report.json.
    assert {e.reference_id for e in worst.expected.evidence} == {
        "astronomy-kuiper-belt",
        "astronomy-solar-wind",
    }
    row = page[page.index("<td>astronomy-q12<br>") :]
    row = row[: row.index("</tr>")]
    assert "<b>answer:</b> Gerard Kuiper | Kuiper" in row
    assert "<b>evidence:</b> astronomy-kuiper-belt" in row
    assert "raw/benchmarks/sample/test/astronomy-kuiper-belt/astronomy-kuiper-belt.txt" in row
    assert '<span class="hit" title="named by the evidence">✓ </span>' in row
    assert "<b>answer given:</b>" in row


def test_the_page_a_run_writes_is_the_page_drawn_in_one_process(
    answered_run: tuple[Path, EvaluationReport], tmp_path: Path
) -> None:
    """The run renders the text itself and has a worker process draw the figures from their
    data: the page it wrote is the one drawn here in one go, figure for figure."""
    run_dir, report = answered_run
    written = (run_dir / REPORT_HTML).read_text(encoding="utf-8")
    here = write_html_report(report, tmp_path / REPORT_HTML).read_text(encoding="utf-8")
    assert "heta-figure" not in written
    # The summary, one histogram per metric and the latencies.
    assert written.count("data:image/png;base64,") >= 3
    assert written == here


def test_text_from_data_is_escaped(answered_run: tuple[Path, EvaluationReport]) -> None:
    _, report = answered_run
    first = report.case_results[0]
    hostile = first.model_copy(
        update={
            "query_mode": report.primary_query_mode,  # its worst-cases tables show queries
            "query": "<script>alert('q')</script>",
            "labels": {"difficulty": "<b>x</b>"},
            "answer": "<img src=x onerror=alert(1)>",
            "scores": tuple(s.model_copy(update={"value": 0.0}) for s in first.scores),
        }
    )
    # A case at the best value, so that the hostile one is among the worst shown.
    good = hostile.model_copy(
        update={
            "case_id": "good",
            "scores": tuple(s.model_copy(update={"value": 1.0}) for s in first.scores),
        }
    )
    page = render_html(report.model_copy(update={"case_results": (hostile, good)}))
    assert "<script" not in page and "<img src=x" not in page and "<b>x</b>" not in page
    assert "&lt;script&gt;alert(&#x27;q&#x27;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_a_report_without_expected_fields_still_renders(
    answered_run: tuple[Path, EvaluationReport],
) -> None:
    _, report = answered_run
    # Reports written before case results carried `expected` have no such field.
    data = report.model_dump(mode="json")
    for result in data["case_results"]:
        del result["expected"]
    old = EvaluationReport.model_validate(data)
    assert all(r.expected is None for r in old.case_results)
    page = render_html(old)
    assert "<td class='text'><span class=\"muted\">—</span></td>" in page


def test_a_report_of_10k_case_results_stays_small(
    answered_run: tuple[Path, EvaluationReport], tmp_path: Path
) -> None:
    _, report = answered_run
    copies = -(-10_000 // len(report.case_results))
    many = tuple(
        r.model_copy(update={"case_id": f"{r.case_id}-{i}"})
        for i in range(copies)
        for r in report.case_results
    )[:10_000]
    big = report.model_copy(update={"case_results": many})
    path = write_html_report(big, tmp_path / REPORT_HTML)
    size = path.stat().st_size
    print(f"report.html of {len(many)} case results: {size / 1e6:.2f} MB")
    assert size < 1_500_000
    page = path.read_text(encoding="utf-8")
    tables = page.count("lowest</summary>")
    assert tables >= 3  # answer_exact_match is 0 everywhere: nothing below its best value
    assert page.count("<tr><td class='num'>") == tables * WORST_CASES


def screenshot(page: Path, png: Path) -> subprocess.CompletedProcess[str]:
    """Render `page` with headless Chromium into `png` (1280 x 2400)."""
    profile = png.parent / "chromium-profile"
    return chromium(page, profile, f"--screenshot={png}", "--window-size=1280,2400", timeout=120)


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"headless Chromium not installed ({CHROMIUM})")
def test_report_renders_in_headless_chromium(
    answered_run: tuple[Path, EvaluationReport], tmp_path: Path
) -> None:
    from PIL import Image, ImageStat

    run_dir, _ = answered_run
    page = tmp_path / REPORT_HTML
    shutil.copyfile(run_dir / REPORT_HTML, page)
    png = tmp_path / "report-screenshot.png"
    proc = screenshot(page, png)
    assert proc.returncode == 0 and png.is_file(), proc.stderr[-2000:]
    print(f"screenshot: {png}")
    image = Image.open(png).convert("RGB")
    assert image.size == (1280, 2400)
    # A page that failed to render is one flat colour; this one has a dark header, text,
    # tables and coloured plots.
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 200
    assert max(ImageStat.Stat(image).stddev) > 30
    header = image.getpixel((640, 12))
    assert all(channel < 80 for channel in header)  # the dark title bar (#24292f)
    plots = image.crop((0, 700, 1280, 2400)).getcolors(maxcolors=1 << 20)
    blue = (0x4C, 0x72, 0xB0)  # the primary mode's colour in the plots
    assert plots is not None and any(c == blue for _, c in plots)
