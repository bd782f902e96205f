"""`heta-eval-compare`'s outputs: Markdown, JSON and the HTML page, whose plots keep their
text inside the image and whose tables fit a 1,280 px window in headless Chromium."""

from __future__ import annotations

import html
import itertools
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from heta_eval.compare import compare_reports, write_outputs

from ...browser import CHROMIUM, chromium
from ...compare_helpers import binary_pair, synthetic_report


def test_outputs_hold_the_tables_plots_and_every_number(tmp_path: Path) -> None:
    comparison = compare_reports(list(binary_pair()), resamples=2000)
    paths = write_outputs(comparison, tmp_path / "out")
    assert {p.name for p in paths.values()} == {
        "comparison.md",
        "comparison.html",
        "comparison.json",
    }
    markdown = paths["markdown"].read_text()
    assert "| run | query mode | bm25.hit@1 | bm25.ndcg@10 |" in markdown
    assert "| a #0 (baseline) | bm25 | 0.6429 [" in markdown
    assert "| bm25.hit@1 | b #1 [bm25] | baseline [bm25] | -0.1852 |" in markdown
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
    return chromium(page, profile, "--window-size=1280,1100", "--virtual-time-budget=15000", *args)


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"headless Chromium not installed ({CHROMIUM})")
@pytest.mark.parametrize("count", [2, 6])
def test_comparison_html_fits_1280_pixels_in_chromium(count: int, tmp_path: Path) -> None:
    """With 2 and with 6 runs of long labels, the page does not scroll sideways at 1,280 px:
    tables wrap within their boxes and plots shrink to the width."""
    import re

    from PIL import Image

    rng = np.random.default_rng(count)
    base = rng.random(30)

    def hits() -> list:
        values: list = rng.integers(0, 2, 30).tolist()
        values[int(rng.integers(0, 30))] = None  # a skipped case: "n" reads "29 (1 excluded)"
        return values

    runs = [
        synthetic_report(
            f"recipe=bm25_fusion recipe.chunk_size={size} recipe.indexes.bm25.k1=1.{i}",
            {
                "evidence_recall@1": np.clip(base + rng.normal(0, 0.05, 30), 0, 1).tolist(),
                "evidence_recall@5": hits(),
                "ndcg@10": np.clip(base + rng.normal(0.01 * i, 0.05, 30), 0, 1).tolist(),
                "context_has_answer@5": hits(),
            },
        )
        for i, size in enumerate(["null", 32, 64, 128, 256, 512][:count])
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
    assert len(layout["boxes"]) == 3 and len(layout["images"]) == 4
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
