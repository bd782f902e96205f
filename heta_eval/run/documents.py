"""A run's documents in the object store: written under their raw keys
(`raw/benchmarks/{benchmark}/{split}/{document_id}/{name}`), then handed to the builds.

Documents held in memory are written by a separate process while the knowledge bases are
built from the same bytes (`BackgroundStoreWriter`), when there are enough of them for the
disk's metadata time to matter; the run waits for that process only before its report.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from heta_eval.benchmarks.url_guard import PrivateHosts, fetch
from heta_eval.kb import LocalObjectStore, ObjectStore, RawSource
from heta_eval.kb.store import WrittenBytesStore
from heta_eval.kb.store_writer import BackgroundStoreWriter
from heta_eval.records import BenchmarkContents, BenchmarkDocument
from heta_eval.run.settings import RunnerSettings
from heta_eval.run.units import UnitPlan

log = logging.getLogger(__name__)

DISK_FULL = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
# Below this many documents, writing them in a separate process saves less than it costs.
BACKGROUND_WRITES_MIN_DOCUMENTS = 256

DocumentKeys = dict[str, tuple[str, str]]
"""document_id -> (raw key, sha256 of its bytes)."""


def document_bytes(
    document: BenchmarkDocument, offline: bool, private_urls: PrivateHosts = False
) -> bytes:
    """A document's bytes: held in memory, read from its path, or fetched from its URI (every
    address of its host, and of each redirect's, public unless `private_urls` allows it)."""
    if document.data is not None:
        return document.data
    if document.path is not None:
        return Path(document.path).read_bytes()
    assert document.source_uri is not None
    if offline and not document.source_uri.startswith("file:"):
        raise ConnectionRefusedError(f"offline run: not fetching {document.source_uri}")
    if document.source_uri.startswith("file:"):  # allowed when the adapter let it through
        with urllib.request.urlopen(document.source_uri, timeout=60) as handle:
            return handle.read()
    return fetch(document.source_uri, private_urls, timeout=60)


def document_count(plans: Sequence[UnitPlan]) -> int:
    """Distinct documents of the planned units (each is written once)."""
    return len({d.document_id for plan in plans for d in plan.documents})


_RAW_SOURCE_FIELDS = set(RawSource.model_fields)  # shared: never changed


class UnitSources(Sequence[RawSource]):
    """The stored documents of one unit as the RawSource records its build reads, each made
    when it is read rather than held: a corpus of a million documents would otherwise keep a
    million records (~600 bytes each) beside its documents for the whole build."""

    def __init__(self, plan: UnitPlan, keys: DocumentKeys) -> None:
        self._documents = [d for d in plan.documents if d.document_id in keys]
        self._keys = keys

    def __len__(self) -> int:
        return len(self._documents)

    @overload
    def __getitem__(self, position: int) -> RawSource: ...
    @overload
    def __getitem__(self, position: slice) -> list[RawSource]: ...
    def __getitem__(self, position: int | slice) -> RawSource | list[RawSource]:
        if isinstance(position, slice):
            return [self._source(d) for d in self._documents[position]]
        return self._source(self._documents[position])

    def __iter__(self) -> Iterator[RawSource]:
        return map(self._source, self._documents)

    def _source(self, document: BenchmarkDocument) -> RawSource:
        # Not validated again: every field comes from a validated document or the store's
        # key (validating 5k sources cost 0.1-0.3 s of a SciFact run's critical path). Every
        # source shares one set of set fields (pydantic would make one set per object).
        key, sha256 = self._keys[document.document_id]
        return RawSource.model_construct(
            _RAW_SOURCE_FIELDS,
            key=key,
            document_id=document.document_id,
            media_type=document.media_type,
            sha256=sha256,
            metadata=document.metadata,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Sent to worker processes as the records themselves.
        return (list, (list(self),))


def unit_sources(plan: UnitPlan, keys: DocumentKeys) -> UnitSources:
    """The stored documents of one unit, as its build reads them (made when read)."""
    return UnitSources(plan, keys)


class DocumentStorage:
    """Writes the planned units' documents to the object store and gives the builds a store
    that reads the just-written ones from memory."""

    def __init__(
        self, store: ObjectStore, settings: RunnerSettings, private_urls: PrivateHosts = False
    ) -> None:
        self.store = store
        self.settings = settings
        self.private_urls = private_urls

    def background_writer(self, plans: Sequence[UnitPlan]) -> BackgroundStoreWriter | None:
        """A writer process for the documents' bytes, when the builds that follow run in this
        process (they read the same bytes from memory) and there are enough small files for
        the disk's metadata time to matter; None to write them here, before the builds."""
        if not isinstance(self.store, LocalObjectStore):
            return None
        if self.settings.executor == "ray" or (self.settings.workers > 1 and len(plans) > 1):
            return None  # worker processes read the documents from the store
        in_memory = {d.document_id for p in plans for d in p.documents if d.data is not None}
        if len(in_memory) < BACKGROUND_WRITES_MIN_DOCUMENTS:
            return None
        return BackgroundStoreWriter(self.store.root)

    def write(
        self,
        contents: BenchmarkContents,
        digests: Mapping[str, str | None],
        plans: Sequence[UnitPlan],
        writer: BackgroundStoreWriter | None = None,
    ) -> tuple[DocumentKeys, dict[str, str]]:
        """Write the planned units' documents under their raw keys (those held in memory
        through `writer`, when given: it finishes while the knowledge bases are built).

        `digests` are the sha256 computed when the benchmark was read. Returns each
        document's (raw key, sha256) and the documents that could not be stored, with why.
        """
        keys: DocumentKeys = {}
        errors: dict[str, str] = {}
        for plan in plans:
            for document in plan.documents:
                if document.document_id in keys or document.document_id in errors:
                    continue
                key = document.raw_key(contents.manifest)
                try:
                    data = document_bytes(document, self.settings.offline, self.private_urls)
                    if writer is not None and document.data is not None:
                        writer.put(key, data)
                    else:
                        self.store.put(key, data)
                except Exception as exc:
                    if isinstance(exc, OSError) and exc.errno in DISK_FULL:
                        # Not this document's fault: every later one would fail too.
                        where: object = key
                        if isinstance(self.store, LocalObjectStore):
                            where = self.store.path_of(key)
                        raise OSError(exc.errno, exc.strerror, str(where)) from exc
                    errors[document.document_id] = f"{type(exc).__name__}: {exc}"
                    log.warning("document %s could not be stored: %s", document.document_id, exc)
                    continue
                known = digests.get(document.document_id)
                keys[document.document_id] = (key, known or hashlib.sha256(data).hexdigest())
        if writer is not None:
            writer.flush()
        return keys, errors

    def written_store(self, contents: BenchmarkContents, keys: DocumentKeys) -> ObjectStore:
        """The store, reading the documents just written from the bytes held in memory."""
        written = {
            keys[d.document_id][0]: d.data
            for d in contents.documents
            if d.data is not None and d.document_id in keys
        }
        return WrittenBytesStore(self.store, written) if written else self.store
