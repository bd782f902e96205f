"""The figures of report.html as data: drawn at once, or collected to be drawn elsewhere.

A figure is a JSON-ready spec (`{"kind": "histogram", ...}`) that `draw` turns into a PNG.
The page's text is rendered with a `FigureSet`: drawing here puts each PNG in place, while a
collecting set leaves a placeholder and keeps the spec, so that another process (the
report.html worker, which has matplotlib imported) draws the figures while this one goes on;
`fill` then puts the PNGs in. Placeholders are HTML comments, which escaped data can never
produce.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

from heta_eval.reporting.markup import escape_text

Spec = dict[str, Any]
_PLACEHOLDER = re.compile(r"<!--heta-figure:(\d+)-->")


def draw(spec: Spec) -> bytes:
    """The PNG of one figure spec."""
    from heta_eval.reporting import plots  # matplotlib: imported when a figure is drawn

    kind = spec["kind"]
    if kind == "summary":
        cells = {
            (mode, metric): (mean, low, high) for mode, metric, mean, low, high in spec["cells"]
        }
        return plots.summary_plot(spec["metrics"], spec["modes"], cells, spec["confidence"])
    if kind == "histogram":
        return plots.histogram(spec["metric"], spec["values"])
    if kind == "latency":
        return plots.latency_plot(spec["latencies"])
    raise ValueError(f"unknown figure kind {kind!r}")


def image(png: bytes, alt: str) -> str:
    """An <img> holding `png`."""
    encoded = base64.b64encode(png).decode("ascii")
    return f'<img alt="{escape_text(alt)}" src="data:image/png;base64,{encoded}">'


class FigureSet:
    """The figures of one page: drawn as they are added (`collect=False`) or collected as
    specs, each leaving a placeholder that `fill` replaces with its PNG."""

    def __init__(self, collect: bool = False) -> None:
        self.collect = collect
        self.specs: list[Spec] = []
        self.alts: list[str] = []

    def add(self, spec: Spec, alt: str) -> str:
        """The figure's place in the page."""
        if not self.collect:
            return image(draw(spec), alt)
        self.specs.append(spec)
        self.alts.append(alt)
        return f"<!--heta-figure:{len(self.specs) - 1}-->"

    def fill(self, page: str, pngs: Sequence[bytes]) -> str:
        """`page` with each placeholder replaced by its figure."""
        if len(pngs) != len(self.specs):
            raise ValueError(f"{len(pngs)} figures drawn for {len(self.specs)} specs")
        return _PLACEHOLDER.sub(lambda m: image(pngs[int(m[1])], self.alts[int(m[1])]), page)
