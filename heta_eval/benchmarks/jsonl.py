"""JsonlBenchmark: a benchmark from two user files, documents.jsonl and cases.jsonl."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from heta_eval.benchmarks.jsonl_files import (
    MAX_LINE_BYTES,
    MAX_NESTING,
    NESTING_LIMIT,
    BenchmarkDataError,
    iter_jsonl,
    validate_line,
)
from heta_eval.benchmarks.jsonl_sources import SourcePolicy, document_source
from heta_eval.benchmarks.url_guard import private_hosts
from heta_eval.config.components import instantiate
from heta_eval.evaluators import AnswerContains, EvidenceRecallAtK, NDCGAtK
from heta_eval.protocols import BenchmarkAdapter, BenchmarkEvaluatorProtocol
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkDocument,
    BenchmarkManifest,
    BenchmarkResource,
    BenchmarkRunUnit,
    BenchmarkWorkspace,
    BuildScope,
    PreparedBenchmark,
)
from heta_eval.records._base import check_bare_name

CORPUS_UNIT_ID = "corpus"


def _unit_id(record: dict[str, Any], path: Path, lineno: int) -> str | None:
    """The line's `unit_id`: a JSON string and a bare name; a number is refused rather than
    coerced, so `1` and `"1"` can never name one unit by accident."""
    value = record.pop("unit_id", None)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise BenchmarkDataError(
            f"{path}:{lineno}: unit_id: expected a non-empty string, got "
            f"{type(value).__name__} {value!r:.60}"
            + (f' (write "{value}" if that is the unit\'s name)' if isinstance(value, int) else "")
        )
    try:
        return check_bare_name(value, "unit_id")
    except ValueError as exc:
        raise BenchmarkDataError(f"{path}:{lineno}: {exc}") from None


def _check_new_id(seen: dict[str, int], value: str, field: str, path: Path, lineno: int) -> None:
    """Refuse an id already used on an earlier line of the same file (naming both lines)."""
    first = seen.setdefault(value, lineno)
    if first != lineno:
        raise BenchmarkDataError(
            f"{path}:{lineno}: {field}: duplicate {value!r} (first used on line {first})"
        )


class JsonlBenchmark(BenchmarkAdapter):
    """A benchmark read from `documents.jsonl` and `cases.jsonl`.

    documents.jsonl, one object per line: `document_id`, and one of `text` (inline text,
    never decoded), `content_base64` (binary content), `path` (relative to the file, and
    inside its directory) or `source_uri` (a public http(s) URL); optional `name` (default
    `{document_id}.txt`, `.bin` for binary), `media_type` (default `text/plain`), `unit_id`,
    `metadata`. Ids are JSON strings (numbers are refused, not coerced).
    `allow_paths_outside_data_dir` lets `path` (and `file:` URIs) name any local file,
    `allow_private_urls` lets `source_uri` name loopback and private addresses: `true` for
    every host, or a list of the host names allowed (as written in the URLs).
    `max_line_bytes` (64 MiB) and `max_nesting` (100 levels, at most 500) bound each line of
    both files.

    cases.jsonl: `case_id`, `query`, `expected` (`answers`, `evidence` with `reference_id`,
    `locator`, `text`) — or `answers`/`evidence` at the top level — optional `unit_id`,
    `metadata`.

    With `build_scope="corpus"` one knowledge base serves every case. With `"case"` or
    `"group"` each `unit_id` becomes its own knowledge base over the documents that carry
    that `unit_id` (documents without one join every unit) and is queried with the cases
    that carry it. Default evaluators: evidence recall@1 and @5, nDCG@10 and whether the
    top-5 context holds an expected answer; `evaluators` (a list of `_target_` specs)
    replaces them. `slice_by` names case metadata keys the report also summarises by.
    """

    def __init__(
        self,
        documents: str | Path,
        cases: str | Path,
        name: str = "jsonl",
        version: str = "1",
        split: str = "test",
        task_type: str = "qa",
        build_scope: BuildScope = "corpus",
        evaluators: Sequence[Mapping[str, Any]] | None = None,
        metadata: Mapping[str, Any] | None = None,
        slice_by: Sequence[str] = (),
        allow_paths_outside_data_dir: bool = False,
        allow_private_urls: bool | Sequence[str] = False,
        max_line_bytes: int = MAX_LINE_BYTES,
        max_nesting: int = MAX_NESTING,
    ) -> None:
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be >= 1, got {max_line_bytes}")
        if not 1 <= max_nesting <= NESTING_LIMIT:
            raise ValueError(f"max_nesting must be within [1, {NESTING_LIMIT}], got {max_nesting}")
        self.documents_path = Path(documents).expanduser()
        self.cases_path = Path(cases).expanduser()
        self._manifest = BenchmarkManifest(
            name=name,
            version=version,
            split=split,
            task_type=task_type,
            build_scope=build_scope,
            metadata=dict(metadata or {}),
        )
        self._evaluator_specs = [dict(s) for s in evaluators] if evaluators is not None else None
        self.slice_by = tuple(slice_by)
        self.allow_paths_outside_data_dir = bool(allow_paths_outside_data_dir)
        self.allow_private_urls = private_hosts(allow_private_urls)
        self._bounds = {"max_line_bytes": max_line_bytes, "max_nesting": max_nesting}

    @property
    def manifest(self) -> BenchmarkManifest:
        return self._manifest

    def resources(self) -> tuple[BenchmarkResource, ...]:
        return ()

    async def prepare(self, workspace: BenchmarkWorkspace) -> PreparedBenchmark:
        for label, path in (("documents", self.documents_path), ("cases", self.cases_path)):
            if not path.is_file():
                raise BenchmarkDataError(
                    f"benchmark.{label}: file not found: {path} (an absolute path, or one "
                    "relative to the directory heta-eval was started in)"
                )
        return PreparedBenchmark(
            manifest=self.manifest,
            root=self.documents_path.parent.resolve(),
            paths={"documents": self.documents_path.resolve(), "cases": self.cases_path.resolve()},
        )

    @cached_property
    def _documents(self) -> tuple[tuple[BenchmarkDocument, str | None], ...]:
        rows = []
        seen: dict[str, int] = {}
        policy = SourcePolicy(
            data_dir=self.documents_path.parent,
            allow_paths_outside_data_dir=self.allow_paths_outside_data_dir,
            allow_private_urls=self.allow_private_urls,
        )
        for lineno, raw in iter_jsonl(self.documents_path, **self._bounds):
            record = dict(raw)
            unit_id = _unit_id(record, self.documents_path, lineno)
            for field in ("data", "source"):
                if field in record:
                    raise BenchmarkDataError(
                        f"{self.documents_path}:{lineno}: {field}: not a documents.jsonl field "
                        "(give text, content_base64, path or source_uri)"
                    )
            record = document_source(record, policy, f"{self.documents_path}:{lineno}")
            document = validate_line(BenchmarkDocument, record, self.documents_path, lineno)
            _check_new_id(seen, document.document_id, "document_id", self.documents_path, lineno)
            rows.append((document, unit_id))
        return tuple(rows)

    @cached_property
    def _cases(self) -> tuple[tuple[BenchmarkCase, str | None], ...]:
        rows = []
        seen: dict[str, int] = {}
        for lineno, raw in iter_jsonl(self.cases_path, **self._bounds):
            record = dict(raw)
            unit_id = _unit_id(record, self.cases_path, lineno)
            shorthand = {k: record.pop(k) for k in ("answers", "evidence") if k in record}
            if shorthand:
                if "expected" in record:
                    raise BenchmarkDataError(
                        f"{self.cases_path}:{lineno}: give answers/evidence either inside "
                        "'expected' or at the top level, not both"
                    )
                record["expected"] = shorthand
            case = validate_line(BenchmarkCase, record, self.cases_path, lineno)
            _check_new_id(seen, case.case_id, "case_id", self.cases_path, lineno)
            rows.append((case, unit_id))
        return tuple(rows)

    async def documents(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkDocument]:
        for document, _ in self._documents:
            yield document

    async def cases(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkCase]:
        for case, _ in self._cases:
            yield case

    async def run_units(self, prepared: PreparedBenchmark) -> AsyncIterator[BenchmarkRunUnit]:
        if self.manifest.build_scope == "corpus":
            yield BenchmarkRunUnit(unit_id=CORPUS_UNIT_ID)
            return
        unit_cases: dict[str, list[str]] = {}
        for case, unit_id in self._cases:
            if unit_id is None:
                raise BenchmarkDataError(
                    f"{self.cases_path}: case {case.case_id!r} has no unit_id, which "
                    f"build_scope={self.manifest.build_scope!r} needs (or use build_scope=corpus)"
                )
            unit_cases.setdefault(str(unit_id), []).append(case.case_id)
        shared = [d.document_id for d, u in self._documents if u is None]
        for unit_id, case_ids in unit_cases.items():
            own = [d.document_id for d, u in self._documents if u is not None and str(u) == unit_id]
            if not own and not shared:
                raise BenchmarkDataError(
                    f"{self.documents_path}: no document has unit_id {unit_id!r}, "
                    f"which cases in {self.cases_path} use"
                )
            yield BenchmarkRunUnit(
                unit_id=unit_id, document_ids=tuple(shared + own), case_ids=tuple(case_ids)
            )

    def evaluators(self) -> tuple[BenchmarkEvaluatorProtocol, ...]:
        if self._evaluator_specs is not None:
            return tuple(instantiate(spec) for spec in self._evaluator_specs)
        return (
            EvidenceRecallAtK(k=1),
            EvidenceRecallAtK(k=5),
            NDCGAtK(k=10),
            AnswerContains(target="context", k=5),
        )
