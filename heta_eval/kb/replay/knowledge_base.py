"""ReplayKnowledgeBase: answers each case with what the replayed files recorded for it."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from heta_eval.config.components import instantiate
from heta_eval.kb.documents import RawSource
from heta_eval.kb.replay.files import (
    ReplayedCase,
    ReplayedFiles,
    ReplayedItem,
    ReplayInputError,
)
from heta_eval.kb.store import ObjectStore
from heta_eval.protocols import BaseKnowledgeBase
from heta_eval.records import (
    BenchmarkCase,
    BuildStep,
    KnowledgeBaseManifest,
    KnowledgeBaseScope,
    QueryResponse,
    QueryResult,
    SourceRef,
)


@dataclass(frozen=True)
class ReplaySettings:
    """What a replay's knowledge base takes from its recipe: the recipe's name and query
    modes (for the manifest), the parser spec that reads a document's text when a file gives
    none, and the component named in the build step (the recipe's class)."""

    recipe_name: str
    query_modes: tuple[str, ...]
    parser: Mapping[str, Any]
    component: str


class ReplayKnowledgeBase(BaseKnowledgeBase):
    """The documents of one run unit and the replayed files; nothing is indexed.

    A retrieved item's text is its `text` in the file; else, with both files given, the
    text of the predictions' item for the same document (and chunk); else the document's
    text (a `start_char`/`end_char` locator takes that slice of it), parsed on first use.
    A docid outside the unit's documents keeps its rank with empty text.
    """

    def __init__(
        self,
        *,
        name: str,
        files: ReplayedFiles,
        settings: ReplaySettings,
        store: ObjectStore,
        sources: Sequence[RawSource],
    ) -> None:
        started = time.perf_counter()
        self.name = name
        self.files = files
        self.settings = settings
        self._store = store
        self._sources = {s.document_id: s for s in sources}
        self._texts: dict[str, str] = {}
        self._parser: Any = None
        self._manifest = KnowledgeBaseManifest(
            name=name,
            recipe_name=settings.recipe_name,
            query_modes=settings.query_modes,
            source_keys=tuple(s.key for s in sources),
            steps=(
                BuildStep(
                    name="replay",
                    component=settings.component,
                    seconds=time.perf_counter() - started,
                    counts={f"{kind}_cases": len(f.cases) for kind, f in files.by_kind.items()},
                ),
            ),
            # No "chunks": how many items the system that produced the files could retrieve is
            # unknown, so no metric is skipped as unable to discriminate on a replay.
            counts={"sources": len(sources), "documents": len(sources)},
            build_seconds=time.perf_counter() - started,
        )

    def manifest(self) -> KnowledgeBaseManifest:
        """The unit's sources and the replayed files' case counts."""
        return self._manifest

    async def query(
        self, text: str, *, mode: str, top_k: int = 10, options: Mapping[str, Any] | None = None
    ) -> QueryResponse:
        """Not answerable: a replay answers cases by id (`query_case`), never free text."""
        raise ReplayInputError("a replayed run answers benchmark cases by id, not free text")

    async def query_case(
        self, case: BenchmarkCase, *, unit_id: str, mode: str, top_k: int = 10
    ) -> QueryResponse:
        """The recorded ranking (cut to `top_k`) and answer of `case`; an error naming the
        file when a file has no line for it."""
        if top_k <= 0:
            raise ValueError(f"top_k must be a positive integer, got {top_k}")
        entries: dict[str, ReplayedCase] = {}
        for kind, file in self.files.by_kind.items():
            entry = self.files.lookup(kind, unit_id, case.case_id)
            if entry is None:
                raise ReplayInputError(
                    f"{file.path} has no line for case {case.case_id!r} (unit {unit_id!r})"
                )
            entries[kind] = entry
        ranking = entries.get("run") or entries["predictions"]
        answered = entries.get("predictions")
        texts = _item_texts(answered) if answered is not None and "run" in entries else {}
        items = (ranking.items or ())[:top_k]
        size = next(
            (
                e.knowledge_base_items
                for e in entries.values()
                if e.knowledge_base_items is not None
            ),
            None,
        )
        return QueryResponse(
            query=case.query,
            mode=mode,
            results=tuple(self._result(item, ranking.path, texts) for item in items),
            answer=answered.answer if answered is not None else None,
            trace={"replayed_from": {k: e.where for k, e in entries.items()}},
            scope=None
            if size is None
            else KnowledgeBaseScope(
                items=size, documents=len(self._sources), answers=answered is not None
            ),
        )

    def _result(self, item: ReplayedItem, path: str, texts: Mapping[str, str]) -> QueryResult:
        locator = dict(item.locator)
        source = self._sources.get(item.document_id)
        text = item.text
        if text is None:
            text = texts.get(item.document_id)
        if text is None:
            text = self._document_text(item.document_id) if source is not None else ""
            start, end = locator.get("start_char"), locator.get("end_char")
            if start is not None or end is not None:
                text = text[start:end]
        chunk_id = locator.get("chunk_id")
        return QueryResult(
            id=item.id or chunk_id or item.document_id,
            text=text,
            score=item.score,
            kind="chunk" if chunk_id or "start_char" in locator else "document",
            source=SourceRef(
                source_key=source.key if source is not None else f"{path}:{item.line}",
                document_id=item.document_id,
                **locator,
            ),
        )

    def _document_text(self, document_id: str) -> str:
        text = self._texts.get(document_id)
        if text is None:
            if self._parser is None:
                self._parser = instantiate(self.settings.parser)
            source = self._sources[document_id]
            text = self._parser.parse(source, self._store.get(source.key)).text
            self._texts[document_id] = text
        return text


def _item_texts(entry: ReplayedCase) -> dict[str, str]:
    """Texts the predictions give, by document id (the first item of each document)."""
    texts: dict[str, str] = {}
    for item in entry.items or ():
        if item.text is not None:
            texts.setdefault(item.document_id, item.text)
    return texts
