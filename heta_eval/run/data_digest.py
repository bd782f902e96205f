"""The data part of a run's identity: one digest over everything the benchmark yields,
computed while it is read (no second pass over documents or cases)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from heta_eval.files import file_sha256
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkDocument,
    BenchmarkManifest,
    BenchmarkRunUnit,
)


class DataDigest:
    """sha256 over the manifest, every document (its id, name, media type, metadata and the
    sha256 of its bytes), every case and every run unit, in the order they are yielded.

    A document given by `path` is read and hashed here; one given by `source_uri` is
    identified by its URI (its bytes are fetched later, when it is stored). The documents'
    digests are kept: the runner stores and keys the build cache with them.
    """

    def __init__(self, manifest: BenchmarkManifest) -> None:
        self._digest = hashlib.sha256(manifest.model_dump_json().encode())
        self.document_sha256: dict[str, str | None] = {}

    def _add(self, kind: bytes, text: str) -> None:
        self._digest.update(kind)
        self._digest.update(text.encode("utf-8"))
        self._digest.update(b"\n")

    def document(self, document: BenchmarkDocument) -> BenchmarkDocument:
        """Fold one document in; return it unchanged."""
        content: str | None
        if document.data is not None:
            content = hashlib.sha256(document.data).hexdigest()
        elif document.path is not None:
            try:
                content = file_sha256(Path(document.path))
            except OSError as exc:  # recorded as a document error when it is stored
                content = None
                self._add(b"unreadable ", f"{document.document_id} {type(exc).__name__}")
        else:
            content = None
        self.document_sha256[document.document_id] = content
        source = content or f"uri:{document.source_uri}"
        metadata = _metadata(document.metadata) if document.metadata else ""
        fields = (document.document_id, document.name, document.media_type, source, metadata)
        self._add(b"document ", "\0".join(fields))
        return document

    def case(self, case: BenchmarkCase) -> BenchmarkCase:
        """Fold one case in (query, expected answers and evidence, metadata); return it."""
        self._add(b"case ", case.model_dump_json())
        return case

    def unit(self, unit: BenchmarkRunUnit) -> BenchmarkRunUnit:
        """Fold one run unit in; return it."""
        self._add(b"unit ", unit.model_dump_json())
        return unit

    def hexdigest(self) -> str:
        """The digest of everything folded in so far."""
        return self._digest.hexdigest()


# One encoder for every document: `json.dumps(..., sort_keys=True, default=str)` builds a new
# one per call, which cost more than encoding a document's small metadata (the same text).
_METADATA_JSON = json.JSONEncoder(sort_keys=True, default=str)


def _metadata(metadata: object) -> str:
    return _METADATA_JSON.encode(metadata)
