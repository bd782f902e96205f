"""The run journal: finished case results appended as they complete, for crash-safe resume."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from heta_eval.records import EvaluationCaseResult, KnowledgeBaseManifest

log = logging.getLogger(__name__)

CaseKey = tuple[str, str, str]
"""(unit_id, case_id, query_mode): how case results are identified and paired."""


def case_key(result: EvaluationCaseResult) -> CaseKey:
    """The identity of a case result."""
    return (result.unit_id, result.case_id, result.query_mode)


class CaseJournal:
    """An append-only JSON-lines file of finished case results and built units.

    Each line is flushed as it is written, so a run killed at any moment leaves every
    finished result on disk; a torn last line (the kill came mid-write) is cut off when the
    journal is read again. The first line names the run's identity; a journal written for
    another identity is never reused.

    Only final results are replayed: a result that failed (a build, a query or an evaluator
    raised, often for a reason of the environment: a read-only directory, an endpoint that
    was down) is evaluated again on resume; `retried` counts them after `read`.
    """

    def __init__(self, path: Path, identity: str) -> None:
        self.path = path
        self.identity = identity
        self.retried = 0
        self._handle: IO[str] | None = None

    def read(self) -> tuple[dict[CaseKey, EvaluationCaseResult], dict[str, KnowledgeBaseManifest]]:
        """Final results and unit manifests recorded so far (empty for a new journal)."""
        results: dict[CaseKey, EvaluationCaseResult] = {}
        failed: set[CaseKey] = set()
        units: dict[str, KnowledgeBaseManifest] = {}
        if not self.path.is_file():
            return results, units
        good_bytes = 0
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle):
                try:
                    line = json.loads(raw)
                    if number == 0:
                        if line.get("identity") != self.identity:
                            log.warning("%s belongs to another run; starting over", self.path)
                            return {}, {}
                    elif line["kind"] == "case":
                        result = EvaluationCaseResult.model_validate(line["result"])
                        if result.error is None:
                            results[case_key(result)] = result
                            failed.discard(case_key(result))
                        else:
                            failed.add(case_key(result))
                    elif line["kind"] == "unit":
                        units[line["unit_id"]] = KnowledgeBaseManifest.model_validate(
                            line["manifest"]
                        )
                except (json.JSONDecodeError, KeyError, TypeError, ValidationError):
                    log.warning("%s: cutting a torn line %d", self.path, number + 1)
                    break
                if not raw.endswith(b"\n"):
                    break
                good_bytes += len(raw)
        with self.path.open("r+b") as handle:
            handle.truncate(good_bytes)
        if good_bytes == 0:
            self.path.unlink()
        self.retried = len(failed)
        if failed:
            log.info("resuming: %d failed case results are evaluated again", len(failed))
        return results, units

    def _write(self, lines: Iterable[dict]) -> None:
        self._write_lines(json.dumps(line) for line in lines)

    def _write_lines(self, lines: Iterable[str]) -> None:
        try:
            if self._handle is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fresh = not self.path.is_file() or self.path.stat().st_size == 0
                self._handle = self.path.open("a", encoding="utf-8")
                if fresh:
                    self._handle.write(json.dumps({"identity": self.identity}) + "\n")
            for line in lines:
                self._handle.write(line + "\n")
            self._handle.flush()
        except OSError as exc:
            # A full disk: name the journal; the lines before stay readable (a torn last
            # line is cut when it is read back).
            raise OSError(exc.errno, exc.strerror, str(self.path)) from exc

    def record_cases(self, results: Iterable[EvaluationCaseResult]) -> None:
        """Append finished case results."""
        # Serialised by pydantic straight to JSON text: a few times faster than dumping a
        # dict of a result with its hundred retrieved items (once per case, as it finishes).
        self._write_lines(f'{{"kind": "case", "result": {r.model_dump_json()}}}' for r in results)

    def record_unit(self, unit_id: str, manifest: KnowledgeBaseManifest) -> None:
        """Append the manifest of a built unit."""
        self._write(
            [{"kind": "unit", "unit_id": unit_id, "manifest": manifest.model_dump(mode="json")}]
        )

    def close(self) -> None:
        """Flush to disk and close."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            try:
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror, str(self.path)) from exc
            finally:
                with contextlib.suppress(OSError):
                    handle.close()  # a failed flush is raised above, not again here
