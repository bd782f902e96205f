"""A run's identity: the configuration that shapes results, the data and the code.

The data part is one digest over everything the benchmark yields, computed while it is read
(`DataDigest`: no second pass over documents or cases).

Two evaluations with the same identity produce the same report, so the second may reuse the
first's; anything else is evaluated (still reusing build and response caches whose own
keys, which include the unit's documents and the code, match).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heta_eval.code_identity import code_versions, external_sources
from heta_eval.files import file_sha256
from heta_eval.records import (
    BenchmarkCase,
    BenchmarkDocument,
    BenchmarkManifest,
    BenchmarkRunUnit,
    RunIdentity,
)

if TYPE_CHECKING:
    from heta_eval.run.assembly import RunComponents


def component_modules(resolved: Mapping[str, Any], objects: Iterable[object]) -> set[str]:
    """Modules that hold the run's components: every `_target_` of the benchmark, recipe and
    evaluator groups (recipe parts are created later, at build time) and the classes of the
    created objects (a benchmark's own evaluators)."""
    modules = {type(obj).__module__ for obj in objects}

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            target = node.get("_target_")
            if isinstance(target, str) and "." in target:
                modules.add(target.rpartition(".")[0])
            for value in node.values():
                walk(value)
        elif isinstance(node, list | tuple):
            for value in node:
                walk(value)

    for group in ("benchmark", "recipe", "evaluator"):
        walk(resolved.get(group))
    return modules


def code_digest(modules: Iterable[str]) -> str:
    """Digest of heta_eval's source, the result-shaping libraries' versions and the source of
    the component modules that live outside heta_eval."""
    material = {"packages": code_versions(), "components": external_sources(modules)}
    payload = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def run_identity(config: str, data: str, code: str) -> RunIdentity:
    """The identity of evaluating `config` on `data` with `code` (each a digest)."""
    digest = hashlib.sha256(f"config:{config}\ndata:{data}\ncode:{code}".encode()).hexdigest()
    return RunIdentity(digest=digest, config=config, data=data, code=code)


def components_code_digest(components: RunComponents) -> str:
    """`code_digest` of the modules a run's components come from."""
    objects = [components.benchmark, components.recipe, *components.evaluators]
    return code_digest(component_modules(components.resolved, objects))


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
