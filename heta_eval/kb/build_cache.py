"""A content-addressed cache of built knowledge bases, safe to share between runs and users.

The key is a sha256 over the recipe's build-time settings (parser, chunker, indexes, chunk
sizes — not its name or query-time choices), the sources (raw key, document id, media type
and the sha256 of their bytes) and the versions of the code that builds them. An entry is a
directory holding the chunks, each index's files, the manifest and a checksum list; it is
written to a temporary directory and renamed into place, and on load it must hold exactly
the files its list names, each matching its sha256 (an empty list is no entry). A corrupt,
half-written or unlisted entry is discarded and rebuilt, never used. Cached query responses
are verified against the digest kept beside each (`heta_eval.json_cache.read_verified`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal, NamedTuple

from heta_eval.code_identity import code_versions
from heta_eval.files import directory_mode, file_sha256
from heta_eval.json_cache import JsonFileCache, material_key
from heta_eval.kb.documents import RawSource
from heta_eval.kb.knowledge_base import KnowledgeBase
from heta_eval.kb.recipe import KnowledgeRecipe
from heta_eval.kb.store import ObjectStore
from heta_eval.progress import NO_PROGRESS, StageReporter
from heta_eval.protocols import KnowledgeBaseLike, RecipeLike
from heta_eval.records import KnowledgeBaseManifest, QueryResponse

log = logging.getLogger(__name__)

CacheMode = Literal["off", "read", "write", "readwrite"]
CHECKSUMS = "checksums.json"


def build_key(recipe: KnowledgeRecipe, sources: Sequence[RawSource]) -> str | None:
    """The cache key of building `recipe` over `sources`; None when a source has no digest."""
    # One pass: each source of a unit is made when it is read (`run.documents.UnitSources`).
    rows = [[s.key, s.document_id, s.media_type, s.sha256] for s in sources]
    if any(row[3] is None for row in rows):
        return None
    material = {"recipe": recipe.build_settings(), "sources": rows, "code": code_versions()}
    payload = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# A temporary entry directory this old was left by a killed writer (a save takes seconds).
STALE_SECONDS = 3600


def _remove_stale(candidates: Iterable[Path]) -> None:
    """Delete temporary entry directories that killed writers left behind."""
    now = time.time()
    for path in candidates:
        try:
            if path.is_dir() and now - path.stat().st_mtime > STALE_SECONDS:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue


def verify_entry(entry: Path) -> None:
    """Raise ValueError unless `entry` holds exactly the files its checksum list names, each
    matching its sha256; an empty or missing list is never a valid entry."""
    listed = json.loads((entry / CHECKSUMS).read_text(encoding="utf-8"))
    if not isinstance(listed, dict) or not listed:
        raise ValueError(f"{CHECKSUMS} lists no files")
    present = {p.relative_to(entry).as_posix() for p in entry.rglob("*") if p.is_file()}
    present.discard(CHECKSUMS)
    if present != set(listed):
        unlisted, absent = sorted(present - set(listed)), sorted(set(listed) - present)
        raise ValueError(f"files not in {CHECKSUMS}: {unlisted[:3]}; missing: {absent[:3]}")
    for relative, expected in listed.items():
        if not isinstance(expected, str) or file_sha256(entry / relative) != expected:
            raise ValueError(f"{relative} does not match its checksum")


@dataclass
class CacheStats:
    """What the cache did during a run."""

    hits: int = 0
    misses: int = 0
    discarded: int = 0
    written: int = 0
    uncacheable: int = 0
    response_hits: int = 0
    response_misses: int = 0
    discarded_reasons: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Every count by name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.type in ("int", int)}

    def add(self, other: CacheStats, sign: int = 1) -> None:
        """Fold another run's (or worker's) counts into these (`sign=-1` takes them out)."""
        for name, value in other.counts().items():
            setattr(self, name, getattr(self, name) + sign * value)
        if sign > 0:
            self.discarded_reasons.extend(other.discarded_reasons)

    def as_dict(self) -> dict[str, int]:
        """Counts for report metadata and metrics."""
        return self.counts()


class CachedResponse(NamedTuple):
    """A response from the response cache, with the latency measured when it was stored."""

    response: QueryResponse
    latency_seconds: float | None
    latency_batch_size: int | None


class BuildCache:
    """Built knowledge bases on disk, keyed by content (`mode`: off, read, write, readwrite)."""

    def __init__(self, root: str | os.PathLike[str], mode: CacheMode = "readwrite") -> None:
        if mode not in ("off", "read", "write", "readwrite"):
            raise ValueError(f"cache mode must be off, read, write or readwrite; got {mode!r}")
        self.root = Path(root)
        self.mode = mode
        self.stats = CacheStats()
        self._responses = JsonFileCache(self.root / "responses", "responses")

    def response_key(
        self, kb: KnowledgeBaseManifest, recipe: RecipeLike, query: str, mode: str, top_k: int
    ) -> str | None:
        """Key of one query's response: the built KB, the recipe's query-time parts (fusions,
        reranker, answerer), the query, the mode and the depth. None when the KB was not
        built through the cache (nothing identifies its content)."""
        if self.mode == "off" or kb.cache_key is None:
            return None
        manifest = {k: v for k, v in recipe.manifest().items() if k not in ("name", "description")}
        return material_key(
            {"kb": kb.cache_key, "recipe": manifest, "query": query, "mode": mode, "k": top_k}
        )

    def get_response(self, key: str) -> CachedResponse | None:
        """A cached response, the latency it was measured with when it was stored and that
        measurement's batch size (None: an entry that did not record it), if reading is on."""
        if self.mode not in ("read", "readwrite"):
            return None
        entry = self._responses.get(key)
        try:
            response = QueryResponse.model_validate(entry["response"]) if entry else None
        except (KeyError, ValueError):
            response = None
        if response is None or entry is None:
            self.stats.response_misses += 1
            return None
        self.stats.response_hits += 1
        size = entry.get("latency_batch_size")
        return CachedResponse(
            response,
            entry.get("latency_seconds"),
            size if isinstance(size, int) and size >= 1 else None,
        )

    def put_response(
        self, key: str, response: QueryResponse, latency: float, batch_size: int = 1
    ) -> None:
        """Store a response with its latency and how that was measured (`batch_size`
        queries retrieved in one call, the latency their seconds over their number), if
        writing is on."""
        if self.mode in ("write", "readwrite"):
            self._responses.put(
                key,
                {
                    "response": response.model_dump(mode="json"),
                    "latency_seconds": latency,
                    "latency_batch_size": batch_size,
                },
            )

    def _entry(self, key: str) -> Path:
        return self.root / "kb" / key[:2] / key

    def _load(self, key: str, recipe: KnowledgeRecipe, name: str) -> KnowledgeBase | None:
        entry = self._entry(key)
        if not entry.is_dir():
            return None
        started = time.perf_counter()
        try:
            verify_entry(entry)
            kb = KnowledgeBase.load(entry, recipe=recipe, name=name)
        except Exception as exc:
            reason = f"{entry}: {type(exc).__name__}: {exc}"
            log.warning("discarding corrupt build cache entry %s", reason)
            self.stats.discarded += 1
            self.stats.discarded_reasons.append(reason)
            shutil.rmtree(entry, ignore_errors=True)
            return None
        kb.mark_cached(key, "hit", time.perf_counter() - started)
        return kb

    def _save(self, key: str, kb: KnowledgeBase) -> None:
        entry = self._entry(key)
        if entry.exists():
            return
        entry.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(entry.parent.glob(f".{key[:12]}.*"))
        tmp = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".{key[:12]}."))
        try:
            os.chmod(tmp, directory_mode())  # mkdtemp's directory is 0700
            kb.save(tmp)
            files = sorted(p for p in tmp.rglob("*") if p.is_file())
            checksums = {p.relative_to(tmp).as_posix(): file_sha256(p) for p in files}
            (tmp / CHECKSUMS).write_text(json.dumps(checksums, indent=1), encoding="utf-8")
            os.replace(tmp, entry)
            self.stats.written += 1
        except OSError as exc:
            # Someone else wrote the same entry first (rename onto a non-empty directory),
            # or the disk refused: the build is still good, only not cached.
            log.info("build cache entry %s not written: %s", entry, exc)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def lookup(
        self, recipe: RecipeLike, sources: Sequence[RawSource]
    ) -> Literal["found", "missing", "off", "uncacheable"]:
        """What `get_or_create` would do, without doing it: load an entry (found), build
        (missing), build because reading is off (off), or build an uncacheable recipe."""
        if not isinstance(recipe, KnowledgeRecipe):
            return "uncacheable"
        if self.mode not in ("read", "readwrite"):
            return "off"
        key = build_key(recipe, sources)
        if key is None:
            return "uncacheable"
        return "found" if self._entry(key).is_dir() else "missing"

    async def get_or_create(
        self,
        *,
        recipe: RecipeLike,
        name: str,
        store: ObjectStore,
        sources: Sequence[RawSource],
        progress: StageReporter = NO_PROGRESS,
    ) -> KnowledgeBaseLike:
        """A cached knowledge base for this recipe and these sources, or a fresh build.

        Recipes of other engines (any RecipeLike) are built each time, never cached.
        `progress` shows the build's stages (parse, chunk, index).
        """
        if not isinstance(recipe, KnowledgeRecipe):
            self.stats.uncacheable += 1
            with progress.stage("build", 1, "knowledge bases") as stage:
                built = await recipe.create_knowledge_base(name=name, store=store, sources=sources)
                stage.advance()
            return built
        key = build_key(recipe, sources) if self.mode != "off" else None
        if key is not None and self.mode in ("read", "readwrite"):
            cached = self._load(key, recipe, name)
            if cached is not None:
                self.stats.hits += 1
                return cached
        kb = await KnowledgeBase.create(
            recipe=recipe, name=name, store=store, sources=sources, progress=progress
        )
        if key is None:
            return kb
        self.stats.misses += 1
        kb.mark_cached(key, "miss", None)
        if self.mode in ("write", "readwrite"):
            if kb.persistable():
                self._save(key, kb)
            else:
                self.stats.uncacheable += 1
        return kb
