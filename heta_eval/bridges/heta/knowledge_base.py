"""HetaKnowledgeBase: a built Heta knowledge base behind heta_eval's `KnowledgeBaseLike`.

Heta's build record becomes the manifest (steps with their artifact counts, documents Heta
skipped); Heta's query results become `QueryResult`s whose provenance names heta_eval's
document ids (from the raw keys both object stores share).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import shutil
import weakref
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from heta_eval.kb.documents import RawSource
from heta_eval.protocols import BaseKnowledgeBase
from heta_eval.records import (
    BuildStep,
    KnowledgeBaseManifest,
    QueryResponse,
    QueryResult,
    SourceRef,
)

_RAW_KEY = re.compile(r"^raw/benchmarks/[^/]+/[^/]+/(?P<document_id>.+)/[^/]+$")


def _seconds(started: str | None, finished: str | None) -> float:
    if not started or not finished:
        return 0.0
    try:
        delta = datetime.fromisoformat(finished) - datetime.fromisoformat(started)
    except ValueError:
        return 0.0
    return max(delta.total_seconds(), 0.0)


def _artifact_counts(name: str, value: Any) -> dict[str, int]:
    """Integer counts a Heta artifact carries: ints as they are, collections by length, and
    a result dataclass (e.g. `SplitDocumentsResult`) by its fields."""
    if isinstance(value, bool):
        return {}
    if isinstance(value, int):
        return {name: value}
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        return {name: len(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        counts: dict[str, int] = {}
        for item in dataclasses.fields(value):
            counts.update(_artifact_counts(item.name, getattr(value, item.name)))
        return counts
    return {}


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_json_safe(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _json_safe(dataclasses.asdict(value))
    return str(value)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def document_id_from_raw_key(key: str) -> str | None:
    """`{document_id}` of a raw key `raw/benchmarks/{benchmark}/{split}/{document_id}/{name}`."""
    match = _RAW_KEY.match(key)
    return match.group("document_id") if match else None


class HetaKnowledgeBase(BaseKnowledgeBase):
    """A built Heta knowledge base behind heta_eval's `KnowledgeBaseLike`.

    It takes what it needs of the recipe that built it: the recipe's name and query modes,
    the Heta version (`engine_version`) and whether the split counted code points
    (`unicode_offsets`: token offsets are then character offsets).
    """

    def __init__(
        self,
        kb: Any,
        *,
        name: str,
        recipe_name: str,
        query_modes: tuple[str, ...],
        engine_version: str,
        unicode_offsets: bool,
        sources: Sequence[RawSource],
        build_seconds: float,
        heta_build_seconds: float,
        tokenizer: Mapping[str, str],
        workdir: str | None = None,
    ) -> None:
        self.heta_kb = kb
        self.name = name
        self.recipe_name = recipe_name
        self.query_modes = query_modes
        self.engine_version = engine_version
        self.sources = tuple(sources)
        self.build_seconds = build_seconds
        self.heta_build_seconds = heta_build_seconds
        self.tokenizer = dict(tokenizer)
        self.workdir = workdir
        self._document_ids = {s.key: s.document_id for s in sources}
        # Heta parses identical bytes once (content-addressed), crediting the first raw key;
        # results say which other documents carry the same content.
        by_digest: dict[str, list[str]] = {}
        for s in sources:
            if s.sha256:
                by_digest.setdefault(s.sha256, []).append(s.document_id)
        self._same_content = {
            doc: [d for d in docs if d != doc]
            for docs in by_digest.values()
            if len(docs) > 1
            for doc in docs
        }
        if workdir is not None:
            weakref.finalize(self, shutil.rmtree, workdir, True)
        self._unicode_offsets = unicode_offsets

    def manifest(self) -> KnowledgeBaseManifest:
        record = self.heta_kb.run_record
        artifacts = record.artifacts
        steps = []
        for step in record.step_records:
            counts: dict[str, int] = {}
            for artifact in step.output_artifacts:
                if artifact in artifacts:
                    found = _artifact_counts(artifact, artifacts[artifact])
                    counts.update({k: v for k, v in found.items() if k not in counts})
            steps.append(
                BuildStep(
                    name=step.step_name,
                    component=f"heta_framework:{step.step_type}",
                    seconds=_seconds(step.started_at, step.finished_at),
                    counts=counts,
                )
            )
        counts = {"documents": len(self.sources)}
        for label, artifact in (
            ("parsed_documents", "parsed_document_keys"),
            ("chunks", "chunk_keys"),
        ):
            if artifact in artifacts:
                counts[label] = len(set(artifacts[artifact]))
        parse_result = artifacts.get("parse_documents_result")
        skipped = tuple(getattr(parse_result, "skipped_keys", ()) or ())
        counts["skipped_documents"] = len(skipped)
        return KnowledgeBaseManifest(
            name=self.name,
            recipe_name=self.recipe_name,
            query_modes=self.query_modes,
            source_keys=tuple(s.key for s in self.sources),
            steps=tuple(steps),
            counts=counts,
            build_seconds=self.build_seconds,
            document_errors={
                self._document_id(key) or key: "skipped by Heta ParseDocuments: no parser "
                "for this file type"
                for key in skipped
            },
        )

    def _document_id(self, key: str | None) -> str | None:
        if not key:
            return None
        return self._document_ids.get(key) or document_id_from_raw_key(key)

    async def query(
        self, text: str, *, mode: str, top_k: int = 10, options: Mapping[str, Any] | None = None
    ) -> QueryResponse:
        """Heta's `kb.query`, converted: ranked results with provenance, answer, citations."""
        if mode not in self.query_modes:
            raise ValueError(
                f"query mode {mode!r} is not offered by recipe {self.recipe_name!r}; "
                f"allowed: {list(self.query_modes)}"
            )
        if not text.strip():
            return QueryResponse(query=text, mode=mode)
        answered = self.heta_kb.query(text, mode=mode, top_k=top_k, options=dict(options or {}))
        response = await answered if inspect.isawaitable(answered) else answered
        results = tuple(self._result(item, rank) for rank, item in enumerate(response.results))
        citations = tuple(
            dict.fromkeys(c.result_id or c.id for c in getattr(response, "citations", ()))
        )
        trace = {
            "engine": "heta-framework",
            "engine_version": self.engine_version,
            "heta_mode": response.mode,
            "metadata": _json_safe(getattr(response, "metadata", {})),
        }
        events = getattr(response, "trace", ())
        if events:
            trace["events"] = _json_safe(list(events))
        return QueryResponse(
            query=text,
            mode=mode,
            results=results,
            answer=getattr(response, "answer", None),
            citations=citations,
            trace=trace,
        )

    def _result(self, item: Any, rank: int) -> QueryResult:
        source = dict(item.source or {})
        extra = dict(item.metadata or {})
        keys = [
            source.get("object_key"),
            extra.get("source_key"),
            *(source.get("object_keys") or source.get("source_keys") or ()),
        ]
        key = next((str(k) for k in keys if k), None)
        heta_document_id = source.get("document_id") or extra.get("document_id")
        document_id = self._document_id(key) or heta_document_id or str(item.id)
        chunk_ids = tuple(source.get("chunk_ids") or ())
        chunk_id = str(item.id) if item.kind == "chunk" else (chunk_ids[0] if chunk_ids else None)
        token_start = _int_or_none(source.get("token_start", extra.get("token_start")))
        token_end = _int_or_none(source.get("token_end", extra.get("token_end")))
        meta = {
            "heta_kind": item.kind,
            "heta_document_id": heta_document_id,
            "token_start": token_start,
            "token_end": token_end,
            "chunk_ids": list(chunk_ids) if len(chunk_ids) > 1 else None,
            "heading_path": extra.get("heading_path") or None,
            "retrieval_method": extra.get("retrieval_method"),
            "ranking": extra.get("ranking"),
            "origin": source.get("origin"),
            "same_content_document_ids": self._same_content.get(document_id),
        }
        score = item.score if item.score is not None else 1.0 / (rank + 1)
        return QueryResult(
            id=str(item.id),
            text=item.text,
            score=float(score),
            kind="chunk" if item.kind == "chunk" else str(item.kind),
            source=SourceRef(
                source_key=key or f"heta:{item.kind}/{item.id}",
                document_id=document_id,
                chunk_id=chunk_id,
                chunk_index=_int_or_none(source.get("chunk_index")),
                # With the `unicode` split encoding a token is a code point: token offsets
                # are character offsets of the (unstripped) window in the page text.
                start_char=token_start if self._unicode_offsets else None,
                end_char=token_end if self._unicode_offsets else None,
                page_index=_int_or_none(source.get("page_index")),
                metadata=_json_safe({k: v for k, v in meta.items() if v is not None}),
            ),
        )
