"""Reading the files a replay scores: a TREC run file and predictions JSON Lines.

Both are parsed in full before any work; every problem names its `FILE:LINE`. A TREC run
(`qid Q0 docid rank score tag`) is ranked as trec_eval ranks it: by score, descending, equal
scores by docid, descending; the rank column is read but, as in trec_eval, not used. In a
predictions file the order of `retrieved` is the ranking.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from heta_eval.records._base import check_plain_id

# Locator keys a retrieved item may carry (the provenance fields of a query result).
LOCATOR_KEYS = frozenset(
    {
        "chunk_id",
        "chunk_index",
        "start_char",
        "end_char",
        "page_index",
        "table_id",
        "row_index",
        "column",
    }
)
PREDICTION_KEYS = frozenset(
    {"case_id", "unit_id", "query", "answer", "retrieved", "metadata", "knowledge_base_items"}
)
ITEM_KEYS = frozenset({"document_id", "id", "text", "score", "locator"})
_INT_LOCATORS = frozenset({"chunk_index", "start_char", "end_char", "page_index", "row_index"})
MAX_SHOWN = 10
# The number C's atof reads at the start of a score (trec_eval reads scores with atof).
_C_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def trec_score(text: str) -> float:
    """A run file's score as trec_eval reads it. Python reads more than C does: `1_000` is
    1000 to Python and 1.0 to C's atof (which stops at `_`), and digits of other scripts are
    no digits to C; such a score is read up to where C stops (ValueError if C reads nothing).
    Anything else that Python cannot read (`0x1p3`, `1.5abc`) is refused."""
    if "_" in text or not text.isascii():
        match = _C_NUMBER.match(text.strip())
        if match is None:
            raise ValueError(f"not a number: {text!r}")
        return float(match.group())
    return float(text)


class ReplayInputError(ValueError):
    """A replayed file that cannot be scored; the message names each `FILE:LINE`."""


class ReplayedItem(NamedTuple):
    """One retrieved item of a replayed case (`line`: where in its file; a named tuple, as
    a run file holds millions)."""

    document_id: str
    score: float
    line: int
    id: str | None = None
    text: str | None = None
    locator: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class ReplayedCase:
    """What a file says about one case: its ranking (None: the file gives none) and answer."""

    case_id: str
    unit_id: str | None
    path: str
    line: int  # its first line
    items: tuple[ReplayedItem, ...] | None = None
    answer: str | None = None
    # How many retrievable items the producing system's knowledge base held (None: unknown);
    # with it, metrics that cannot discriminate are skipped as in the original run.
    knowledge_base_items: int | None = None

    @property
    def where(self) -> str:
        """`FILE:LINE` of the case's first line."""
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class ReplayedFile:
    """A parsed file: its path, sha256, kind (`run` or `predictions`) and cases in file order."""

    kind: str
    path: str
    sha256: str
    lines: int
    cases: tuple[ReplayedCase, ...]
    tags: tuple[str, ...] = ()

    def facts(self) -> dict[str, Any]:
        """Path, sha256, line and case counts (and run tags) for the recipe's manifest."""
        facts: dict[str, Any] = {
            "path": self.path,
            "sha256": self.sha256,
            "lines": self.lines,
            "cases": len(self.cases),
        }
        if self.tags:
            facts["tags"] = list(self.tags)
        return facts


class ReplayedFiles:
    """The parsed files of one replay by kind (`run`, `predictions`), each case found by its
    unit and case id (`lookup`)."""

    def __init__(self, files: Mapping[str, ReplayedFile]) -> None:
        self.by_kind: dict[str, ReplayedFile] = dict(files)
        self._index = {
            kind: {(c.unit_id, c.case_id): c for c in file.cases}
            for kind, file in self.by_kind.items()
        }

    def lookup(self, kind: str, unit_id: str, case_id: str) -> ReplayedCase | None:
        """The file's entry for a case: the one naming its unit, else the one without a unit."""
        index = self._index[kind]
        return index.get((unit_id, case_id)) or index.get((None, case_id))

    def digests(self) -> dict[str, str]:
        """The sha256 of each file, by kind."""
        return {kind: file.sha256 for kind, file in self.by_kind.items()}


def read_files(run: str | None, predictions: str | None) -> ReplayedFiles:
    """Read and check a run file and/or a predictions file: every problem names its
    `FILE:LINE` (a ReplayInputError). Without a run file, each prediction needs its
    `retrieved` list (the ranking comes from nowhere else)."""
    files: dict[str, ReplayedFile] = {}
    if run:
        files["run"] = read_run(run)
    if predictions:
        files["predictions"] = read_predictions(predictions)
        if not run:
            lacking = [c.where for c in files["predictions"].cases if c.items is None]
            if lacking:
                raise ReplayInputError(
                    f"{len(lacking)} prediction(s) have no `retrieved` list and no "
                    f"recipe.run gives a ranking (give `retrieved: []` for a case that "
                    f"retrieved nothing): {', '.join(lacking[:MAX_SHOWN])}"
                )
    return ReplayedFiles(files)


def raise_problems(problems: list[str], heading: str) -> None:
    """Raise one ReplayInputError listing the first problems (each `FILE:LINE: ...`)."""
    if not problems:
        return
    shown = "\n".join(f"  {p}" for p in problems[:MAX_SHOWN])
    more = f"\n  ... and {len(problems) - MAX_SHOWN} more" if len(problems) > MAX_SHOWN else ""
    raise ReplayInputError(f"{heading}:\n{shown}{more}")


def _read(path: str) -> tuple[Path, bytes]:
    file = Path(path).expanduser()
    try:
        return file, file.read_bytes()
    except OSError as exc:
        raise ReplayInputError(f"{path}: cannot be read: {exc.strerror or exc}") from None


def _lines(path: str, data: bytes) -> list[str]:
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ReplayInputError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None


def read_run(path: str) -> ReplayedFile:
    """Parse a TREC run file; ids are the benchmark's case and document ids."""
    file, data = _read(path)
    shown = str(file)
    problems: list[str] = []
    ranked: dict[str, dict[str, tuple[float, int]]] = {}
    tags: dict[str, None] = {}
    lines = _lines(shown, data)
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 6:
            problems.append(
                f"{shown}:{number}: expected 6 fields `qid Q0 docid rank score tag`, "
                f"got {len(fields)}"
            )
            continue
        qid, _, docid, rank, score_text, tag = fields
        try:  # bounded and plain: an 80 MB docid is a broken file, not an id
            for value, field in ((qid, "qid"), (docid, "docid"), (tag, "tag")):
                check_plain_id(value, field)
        except ValueError as exc:
            problems.append(f"{shown}:{number}: {exc}")
            continue
        try:
            int(rank)
            score = trec_score(score_text)
        except ValueError:
            problems.append(
                f"{shown}:{number}: rank must be an integer and score a number, got "
                f"{rank!r} and {score_text!r}"
            )
            continue
        if not math.isfinite(score):
            problems.append(f"{shown}:{number}: score must be finite, got {score_text!r}")
            continue
        documents = ranked.get(qid)
        if documents is None:
            documents = ranked[qid] = {}
        elif docid in documents:
            problems.append(
                f"{shown}:{number}: docid {docid!r} listed twice for qid {qid!r} "
                f"(first at line {documents[docid][1]})"
            )
            continue
        documents[docid] = (score, number)
        if tag not in tags:
            tags[tag] = None
    raise_problems(problems, f"{shown}: {len(problems)} problem(s)")
    if not ranked:
        raise ReplayInputError(f"{shown}: no run lines (`qid Q0 docid rank score tag`)")
    cases = []
    for qid, documents in ranked.items():
        # trec_eval's order: score descending, equal scores by docid descending.
        order = sorted(documents, reverse=True)
        order.sort(key=lambda d: documents[d][0], reverse=True)
        items = tuple(ReplayedItem(d, *documents[d]) for d in order)
        first = min(line for _, line in documents.values())
        cases.append(ReplayedCase(qid, None, shown, first, items))
    digest = hashlib.sha256(data).hexdigest()
    return ReplayedFile("run", shown, digest, len(lines), tuple(cases), tuple(tags))


def _id(value: Any, field: str, where: str) -> str | None:
    """An id given as a string or an integer (JSON has no other id type); ValueError at
    `where` for one too long or not plain (`check_plain_id`)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value:
        try:
            return check_plain_id(value, field)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return None


def _locator(value: Any, where: str) -> tuple[tuple[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ValueError(f"{where}: locator must be an object, got {type(value).__name__}")
    unknown = sorted(set(value) - LOCATOR_KEYS)
    if unknown:
        raise ValueError(
            f"{where}: locator keys {unknown} unknown; allowed: {sorted(LOCATOR_KEYS)}"
        )
    for key in _INT_LOCATORS & set(value):
        if value[key] is not None and (type(value[key]) is not int or value[key] < 0):
            raise ValueError(
                f"{where}: locator.{key} must be a non-negative integer, got {value[key]!r}"
            )
    return tuple(sorted((k, v) for k, v in value.items() if v is not None))


def _items(value: Any, where: str, line: int) -> tuple[ReplayedItem, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{where}: retrieved must be a list, got {type(value).__name__}")
    scored = [isinstance(v, dict) and v.get("score") is not None for v in value]
    if any(scored) and not all(scored):
        raise ValueError(f"{where}: give a score for every retrieved item or for none")
    items = []
    for i, item in enumerate(value):
        at = f"{where}: retrieved[{i}]"
        _check_object(item, ITEM_KEYS, at)
        document_id = _id(item.get("document_id"), "document_id", at)
        if document_id is None:
            raise ValueError(f"{at}: document_id must be a non-empty string")
        score = item.get("score")
        if score is None:
            score = float(len(value) - i)  # no scores: the list order is the ranking
        elif type(score) not in (int, float) or not math.isfinite(score):
            raise ValueError(f"{at}: score must be a finite number, got {score!r}")
        text = item.get("text")
        if text is not None and not isinstance(text, str):
            raise ValueError(f"{at}: text must be a string, got {type(text).__name__}")
        items.append(
            ReplayedItem(
                document_id=document_id,
                score=float(score),
                line=line,
                id=_id(item.get("id"), "id", at),
                text=text,
                locator=_locator(item.get("locator"), at),
            )
        )
    return tuple(items)


def _check_object(value: Any, allowed: frozenset[str], where: str) -> None:
    """`value` is a JSON object with no key outside `allowed`, else an error at `where`."""
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(value).__name__}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ValueError(f"{where}: keys {unknown} unknown; allowed: {sorted(allowed)}")


def _prediction(record: Any, path: str, line: int) -> ReplayedCase:
    where = f"{path}:{line}"
    _check_object(record, PREDICTION_KEYS, where)
    case_id = _id(record.get("case_id"), "case_id", where)
    if case_id is None:
        raise ValueError(f"{where}: case_id must be a non-empty string")
    unit_id = record.get("unit_id")
    if unit_id is not None and _id(unit_id, "unit_id", where) is None:
        raise ValueError(f"{where}: unit_id must be a non-empty string when given")
    if "answer" not in record:
        raise ValueError(f"{where}: no `answer` (give null for a case without one)")
    answer = record["answer"]
    if answer is not None and not isinstance(answer, str):
        raise ValueError(f"{where}: answer must be a string or null, got {type(answer).__name__}")
    retrieved = record.get("retrieved")
    items = _items(retrieved, where, line) if retrieved is not None else None
    size = record.get("knowledge_base_items")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise ValueError(f"{where}: knowledge_base_items must be an integer >= 0, got {size!r}")
    return ReplayedCase(case_id, _id(unit_id, "unit_id", where), path, line, items, answer, size)


def read_predictions(path: str) -> ReplayedFile:
    """Parse predictions JSON Lines (one case a line)."""
    file, data = _read(path)
    shown = str(file)
    problems: list[str] = []
    cases: list[ReplayedCase] = []
    seen: dict[tuple[str | None, str], str] = {}
    lines = _lines(shown, data)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{shown}:{number}"
        try:
            case = _prediction(json.loads(line), shown, number)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc.msg} at column {exc.colno})")
            continue
        except ValueError as exc:
            problems.append(str(exc))
            continue
        key = (case.unit_id, case.case_id)
        if key in seen:
            unit = f" of unit {case.unit_id!r}" if case.unit_id else ""
            problems.append(
                f"{where}: case {case.case_id!r}{unit} given twice (first at {seen[key]})"
            )
            continue
        seen[key] = where
        cases.append(case)
    raise_problems(problems, f"{shown}: {len(problems)} problem(s)")
    if not cases:
        raise ReplayInputError(f"{shown}: no predictions (one JSON object a line)")
    digest = hashlib.sha256(data).hexdigest()
    return ReplayedFile("predictions", shown, digest, len(lines), tuple(cases))
