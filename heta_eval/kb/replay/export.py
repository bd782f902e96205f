"""A run's recorded rankings and answers as a predictions file that `recipe=replay` scores.

Each case result of one query mode becomes a line `{"case_id", "unit_id", "query", "answer",
"retrieved": [{"document_id", "id", "score", "locator"}]}`; the locator keeps the chunk id,
page and character offsets, so that a replay cuts the same chunk text out of the document.
Case results whose query (or build) failed have nothing to replay and are left out; the
replay names them as cases the file does not cover.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heta_eval.records import EvaluationCaseResult, EvaluationReport

_LOCATOR = ("chunk_id", "page_index", "start_char", "end_char")


@dataclass(frozen=True)
class ExportCounts:
    """What an export wrote: lines, the query mode read, and cases left out (no response)."""

    written: int
    mode: str
    left_out: tuple[str, ...]


def prediction_line(
    result: EvaluationCaseResult, knowledge_base_items: int | None = None
) -> dict[str, Any]:
    """One case result as a predictions line (with the size of the knowledge base that
    answered it, when known, so that a replay skips what the run skipped)."""
    retrieved = []
    for item in result.retrieved:
        locator = {k: getattr(item, k) for k in _LOCATOR if getattr(item, k) is not None}
        entry: dict[str, Any] = {
            "document_id": item.document_id,
            "id": item.id,
            "score": item.score,
        }
        if locator:
            entry["locator"] = locator
        retrieved.append(entry)
    return {
        "case_id": result.case_id,
        "unit_id": result.unit_id,
        "query": result.query,
        "answer": result.answer,
        "retrieved": retrieved,
        **({} if knowledge_base_items is None else {"knowledge_base_items": knowledge_base_items}),
    }


def unit_sizes(report: EvaluationReport) -> dict[str, int]:
    """Chunks of each unit's knowledge base, from the report's manifests (named
    `{benchmark}-{unit_id}`); units whose knowledge base says nothing are left out."""
    sizes: dict[str, int] = {}
    for unit in report.run.run_units:
        for manifest in report.knowledge_base_manifests:
            if manifest.name.endswith(f"-{unit.unit_id}") and "chunks" in manifest.counts:
                sizes[unit.unit_id] = manifest.counts["chunks"]
    return sizes


def case_results(
    report: EvaluationReport, mode: str | None = None
) -> Iterator[EvaluationCaseResult]:
    """The case results of `mode` (default: the report's primary query mode) that have a
    response to replay."""
    chosen = mode or report.primary_query_mode
    if chosen not in report.query_modes:
        raise ValueError(
            f"query mode {chosen!r} is not in the report; its modes: {list(report.query_modes)}"
        )
    for result in report.case_results:
        if result.query_mode == chosen:
            yield result


def export_predictions(
    report: EvaluationReport, path: str | os.PathLike[str], mode: str | None = None
) -> ExportCounts:
    """Write `report`'s rankings and answers of `mode` to `path` (JSON Lines, atomically)."""
    chosen = mode or report.primary_query_mode or ""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    written, left_out = 0, []
    sizes = unit_sizes(report)
    with tmp.open("w", encoding="utf-8") as handle:
        for result in case_results(report, mode):
            if result.error is not None and result.error.stage in ("build", "query"):
                left_out.append(result.case_id)
                continue
            line = prediction_line(result, sizes.get(result.unit_id))
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            written += 1
    os.replace(tmp, target)
    return ExportCounts(written, chosen, tuple(left_out))
