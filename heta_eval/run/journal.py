"""The run journal: finished case results appended as they complete, for crash-safe resume."""

from __future__ import annotations

import contextlib
import hashlib
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


_CHAIN = b'{"chain": "'
_CHAIN_END = len(_CHAIN) + 64 + len(b'", ')


def chain_digest(previous: str, payload: bytes) -> str:
    """The digest of a journal line: sha256 of the line before's digest (the identity for
    the first line) and the line's own bytes."""
    return hashlib.sha256(previous.encode("ascii") + b"\n" + payload).hexdigest()


def _chained(raw: bytes) -> tuple[str, bytes] | None:
    """A written line's digest and its payload (the line without it); None when it has no
    digest in its place."""
    if not raw.startswith(_CHAIN) or raw[_CHAIN_END - 3 : _CHAIN_END] != b'", ':
        return None
    digest = raw[len(_CHAIN) : _CHAIN_END - 3].decode("ascii", "replace")
    return digest, b"{" + raw[_CHAIN_END:].rstrip(b"\n")


class CaseJournal:
    """An append-only JSON-lines file of finished case results and built units.

    Each line is flushed as it is written, so a run killed at any moment leaves every
    finished result on disk; a torn last line (the kill came mid-write) is cut off when the
    journal is read again. The first line names the run's identity; a journal written for
    another identity is never reused.

    Every later line starts with its digest, chained to the line before and so to the
    identity (`chain_digest`): a line edited, moved or copied in from another journal does
    not match its digest, is ignored with a warning, and its case is evaluated again.

    Only final results are replayed: a result that failed (a build, a query or an evaluator
    raised, often for a reason of the environment: a read-only directory, an endpoint that
    was down) is evaluated again on resume; `retried` counts them after `read`.
    """

    def __init__(self, path: Path, identity: str) -> None:
        self.path = path
        self.identity = identity
        self.retried = 0
        self.rejected = 0
        self._handle: IO[str] | None = None
        self._last = identity

    def read(self) -> tuple[dict[CaseKey, EvaluationCaseResult], dict[str, KnowledgeBaseManifest]]:
        """Final results and unit manifests recorded so far (empty for a new journal)."""
        results: dict[CaseKey, EvaluationCaseResult] = {}
        failed: set[CaseKey] = set()
        units: dict[str, KnowledgeBaseManifest] = {}
        self._last = self.identity
        if not self.path.is_file():
            return results, units
        good_bytes = 0
        rejected: list[int] = []
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle):
                if not raw.endswith(b"\n"):
                    break  # every line is written with its newline: this one is torn
                try:
                    line = json.loads(raw)
                    if number == 0:
                        if line.get("identity") != self.identity:
                            log.warning("%s belongs to another run; starting over", self.path)
                            return {}, {}
                    elif not self._verified(raw):
                        rejected.append(number + 1)
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
                good_bytes += len(raw)
        with self.path.open("r+b") as handle:
            handle.truncate(good_bytes)
        if good_bytes == 0:
            self.path.unlink()
            self._last = self.identity
        if rejected:
            shown = ", ".join(map(str, rejected[:10])) + (", ..." if len(rejected) > 10 else "")
            log.warning(
                "%s: %d line(s) do not match their digest (edited or moved since they were "
                "written: line %s); their cases are evaluated again",
                self.path,
                len(rejected),
                shown,
            )
        self.rejected = len(rejected)
        self.retried = len(failed)
        if failed:
            log.info("resuming: %d failed case results are evaluated again", len(failed))
        return results, units

    def _verified(self, raw: bytes) -> bool:
        """Whether a line read back carries the digest of its bytes chained to the line
        before; the chain goes on from its stored digest either way, so that one edited
        line does not reject the lines after it."""
        chained = _chained(raw)
        if chained is None:
            return False
        digest, payload = chained
        ok = digest == chain_digest(self._last, payload)
        self._last = digest
        return ok

    def _write_lines(self, lines: Iterable[str]) -> None:
        try:
            if self._handle is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fresh = not self.path.is_file() or self.path.stat().st_size == 0
                self._handle = self.path.open("a", encoding="utf-8")
                if fresh:
                    self._handle.write(json.dumps({"identity": self.identity}) + "\n")
                    self._last = self.identity
            for line in lines:
                digest = chain_digest(self._last, line.encode("utf-8"))
                self._handle.write(f'{{"chain": "{digest}", {line[1:]}\n')
                self._last = digest
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
        self._write_lines(
            [
                f'{{"kind": "unit", "unit_id": {json.dumps(unit_id)}, '
                f'"manifest": {manifest.model_dump_json()}}}'
            ]
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
