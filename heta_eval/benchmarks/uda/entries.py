"""One UDA question from each subset's own entry shape: bench JSON entries and QA-table rows.

Every subset writes its answers and evidence differently (see the dataset's SOURCE.md); this
module turns each into a `UdaQuestion`: the answer strings, the structured answer the
subset's metric needs (`uda_answer`), the evidence text the way the authors match it
(`uda_evidence`, see `heta_eval.benchmarks.uda.evidence`) and, for finance, the page.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from heta_eval.benchmarks.jsonl_files import BenchmarkDataError

_PAGE = re.compile(r"page_(\d+)")
_TABLE_ITEM = "FLOAT SELECTED: "


def page_number(q_uid: str) -> int | None:
    """1-based page named in a question id such as `ADI/2009/page_49.pdf-1`, or None."""
    match = _PAGE.search(q_uid)
    return int(match.group(1)) if match else None


def table_text(table: Any) -> str:
    """A table as UDA matches it: each cell followed by a space, each row by a newline."""
    return "".join("".join(f"{cell} " for cell in row) + "\n" for row in table or ())


def unique_texts(*values: Any) -> tuple[str, ...]:
    """The non-blank values as stripped text, first occurrence kept."""
    seen: dict[str, None] = {}
    for value in values:
        text = "" if value is None else str(value).strip()
        if text:
            seen.setdefault(text, None)
    return tuple(seen)


@dataclass(frozen=True)
class UdaQuestion:
    """A question of one document with its answers and evidence, whatever its subset."""

    doc_name: str
    q_uid: str
    question: str
    answers: tuple[str, ...]
    answer: dict[str, Any]
    evidence: dict[str, Any] | None = None
    page: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def _word_evidence(*groups: list[str]) -> dict[str, Any] | None:
    kept = [[{"text": t} for t in g if t and t.strip()] for g in groups]
    kept = [g for g in kept if g]
    return {"level": "word", "groups": kept} if kept else None


# --- bench entries -----------------------------------------------------------------------


def _fin_bench(doc: str, entry: Mapping[str, Any], _: Callable[[str], str | None]) -> UdaQuestion:
    q_uid, answers, context = str(entry["q_uid"]), entry["answers"], entry["context"]
    tables = (table_text(context["table"]), table_text(context.get("table_ori")))
    items = []
    for key, text in (entry.get("evidence") or {}).items():
        if "table" in key:  # a table evidence is matched as the page's whole table
            items.append({"text": tables[0], "alternatives": [tables[1]]})
        elif "text" in key:
            items.append({"text": str(text)})
    str_answer, exe_answer = answers.get("str_answer"), answers.get("exe_answer")
    return UdaQuestion(
        doc_name=doc,
        q_uid=q_uid,
        question=entry["question"],
        answers=unique_texts(str_answer, exe_answer),
        answer={
            "str_answer": "" if str_answer is None else str(str_answer),
            "exe_answer": "" if exe_answer is None else str(exe_answer),
        },
        evidence={"level": "word", "groups": [items]} if items else None,
        page=page_number(q_uid),
        metadata={"program": entry.get("program"), "context": context},
    )


def _tat_bench(
    doc: str, entry: Mapping[str, Any], page_text: Callable[[str], str | None]
) -> UdaQuestion:
    answers = entry["answers"]
    answer = answers["answer"]
    spans = answer if isinstance(answer, list) else [answer]
    page_uid = entry.get("doc_page_uid")
    page = page_text(page_uid) if page_uid else None
    facts = [str(f) for f in entry.get("facts") or ()]
    return UdaQuestion(
        doc_name=doc,
        q_uid=str(entry["q_uid"]),
        question=entry["question"],
        answers=unique_texts(*spans),
        answer={
            "answer": answer,
            "answer_type": str(answers.get("answer_type") or ""),
            "scale": str(answers.get("scale") or ""),
        },
        evidence=_word_evidence(facts, [page] if page else []),
        metadata={"doc_page_uid": page_uid, "derivation": entry.get("derivation")},
    )


def _paper_bench(doc: str, entry: Mapping[str, Any], _: Callable[[str], str | None]) -> UdaQuestion:
    references = [a["answer"] if isinstance(a, Mapping) else a for a in entry["answers"]]
    groups = []
    for annotation in entry.get("evidence") or ():
        group = []
        for text in annotation.get("highlighted_evidence") or ():
            # A table is highlighted by its caption: "FLOAT SELECTED: Table 3: ...".
            if text.startswith(_TABLE_ITEM + "Table"):
                text = text.split(_TABLE_ITEM)[-1]
            group.append(text)
        groups.append(group)
    return UdaQuestion(
        doc_name=doc,
        q_uid=str(entry["q_uid"]),
        question=entry["question"],
        answers=unique_texts(*references),
        answer={"references": [str(r) for r in references]},
        evidence=_word_evidence(*groups),
    )


def _feta_bench(doc: str, entry: Mapping[str, Any], _: Callable[[str], str | None]) -> UdaQuestion:
    table = table_text(entry["evidence"]["table_array"])
    return UdaQuestion(
        doc_name=doc,
        q_uid=str(entry["q_uid"]),
        question=entry["question"],
        answers=unique_texts(entry["answers"]),
        answer={"answer": str(entry["answers"])},
        evidence={"level": "char", "groups": [[{"text": table}]]} if table.strip() else None,
        metadata={"doc_url": entry.get("doc_url")},
    )


def _nq_answers(doc: str, q_uid: str, question: str, short: Any, long: Any) -> UdaQuestion:
    short_text, long_text = str(short or "").strip(), str(long or "").strip()
    return UdaQuestion(
        doc_name=doc,
        q_uid=q_uid,
        question=question,
        answers=unique_texts(short_text, long_text),
        answer={"short_answer": short_text, "long_answer": long_text},
        # The long answer is the passage that supports the question.
        evidence=_word_evidence([long_text]),
    )


def _nq_bench(doc: str, entry: Mapping[str, Any], _: Callable[[str], str | None]) -> UdaQuestion:
    answers = entry["answers"]
    return _nq_answers(
        doc,
        str(entry["q_uid"]),
        entry["question"],
        answers.get("short_answer"),
        answers["long_answer"],
    )


BENCH_READERS: dict[str, Callable[..., UdaQuestion]] = {
    "fin": _fin_bench,
    "tat": _tat_bench,
    "paper_text": _paper_bench,
    "paper_tab": _paper_bench,
    "feta": _feta_bench,
    "nq": _nq_bench,
}


def bench_question(
    subset: str,
    doc: str,
    entry: Any,
    where: str,
    page_text: Callable[[str], str | None] = lambda uid: None,
) -> UdaQuestion:
    """The question of one bench entry; a missing field or wrong shape names the entry."""
    if not isinstance(entry, Mapping):
        raise BenchmarkDataError(f"{where}: expected an object, got {type(entry).__name__}")
    for key in ("q_uid", "question", "answers"):
        if key not in entry:
            raise BenchmarkDataError(f"{where}: missing field {key!r}")
    try:
        question = BENCH_READERS[subset](doc, entry, page_text)
    except KeyError as exc:
        raise BenchmarkDataError(f"{where}: missing field {exc}") from None
    except (TypeError, AttributeError) as exc:
        raise BenchmarkDataError(f"{where}: not a UDA {subset} entry ({exc})") from None
    if not question.question.strip():
        raise BenchmarkDataError(f"{where}.question: must not be empty")
    return question


# --- QA-table rows -----------------------------------------------------------------------


def _tat_answer(text: str, where: str) -> list[str]:
    # tat_qa.csv writes the answer as a Python list: "['129']" or "['a', 'b']".
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise BenchmarkDataError(
            f"{where}.answer: expected a Python list such as ['129'], got {text[:60]!r}"
        ) from None
    return [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]


def row_question(subset: str, row: Mapping[str, str], where: str) -> UdaQuestion:
    """The question of one QA-table row (values as text)."""
    doc, q_uid, question = row["doc_name"].strip(), row["q_uid"].strip(), row["question"].strip()
    if not doc or not q_uid or not question:
        raise BenchmarkDataError(f"{where}: doc_name, q_uid and question must not be empty")
    if subset == "fin":
        str_answer, exe_answer = row["answer_1"].strip(), row.get("answer_2", "").strip()
        answers = unique_texts(str_answer, exe_answer)
        answer: dict[str, Any] = {"str_answer": str_answer, "exe_answer": exe_answer}
        return UdaQuestion(doc, q_uid, question, answers, answer, page=page_number(q_uid))
    if subset == "tat":
        spans = _tat_answer(row["answer"], where)
        answer = {
            "answer": spans,
            "answer_type": row["answer_type"].strip(),
            "scale": row["answer_scale"].strip(),
        }
        return UdaQuestion(doc, q_uid, question, unique_texts(*spans), answer)
    if subset in ("paper_text", "paper_tab"):
        references = [v for k, v in row.items() if k.startswith("answer_") and v.strip()]
        answer = {"references": [r.strip() for r in references]}
        return UdaQuestion(doc, q_uid, question, unique_texts(*references), answer)
    if subset == "feta":
        text = row["answer"].strip()
        return UdaQuestion(doc, q_uid, question, unique_texts(text), {"answer": text})
    return _nq_answers(doc, q_uid, question, row["short_answer"], row["long_answer"])
