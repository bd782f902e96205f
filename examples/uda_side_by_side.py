"""Score UDA answers with the authors' `uda/eval` code and with ours, side by side.

    python examples/uda_side_by_side.py --authors PATH/TO/UDA-Benchmark \\
        [--data /work/shared/datasets/uda] [--options '{"extraction": "stripped"}']

`--authors` is a checkout of github.com/qinchuanhui/UDA-Benchmark (fca5237); its `uda/eval`
is imported from there (needs numpy, scipy, pandas), never copied. For every question of
the six bench files, a set of responses in UDA's own format (`... The answer is: X`, with
the gold answer, variants of it, yes/no sentences, a newline after the colon, numbers
written as `.92`, `(12)`, `12%`, `$1,234 million`, an empty and a missing response, another
question's answer) is scored by both; the script prints, per subset and metric, how many
(question, response) pairs were compared and how many differ, with the first differences.
With `--options`, ours runs with those `AnswerOptions` and the differences are the
options' measured effect.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import random
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from heta_eval.benchmarks.uda.answers import (
    ANSWER_KEY,
    AnswerOptions,
    FetaAnswerF1,
    FinQAExactMatch,
    NqAnswerF1,
    QasperAnswerF1,
    TatQAExactMatch,
    TatQAF1,
)
from heta_eval.benchmarks.uda.entries import bench_question
from heta_eval.records import BenchmarkCase, BenchmarkExpected, QueryResponse

SUBSETS = ("fin", "tat", "paper_text", "paper_tab", "feta", "nq")


def gold_texts(subset: str, entry: dict[str, Any]) -> list[str]:
    answers = entry["answers"]
    if subset == "fin":
        return [str(answers["str_answer"]), str(answers["exe_answer"])]
    if subset == "tat":
        a = answers["answer"]
        return [str(x) for x in a] if isinstance(a, list) else [str(a)]
    if subset.startswith("paper"):
        return [a["answer"] for a in answers]
    if subset == "feta":
        return [answers]
    return [answers["short_answer"], answers["long_answer"]]


def responses(
    subset: str, entry: dict[str, Any], other: str, rng: random.Random
) -> list[str | None]:
    golds = [g for g in gold_texts(subset, entry) if g.strip()] or [""]
    gold = golds[0]
    out: list[str | None] = [None, "", "The answer is:", f"The answer is: {other}"]
    for g in golds:
        out += [
            f"The answer is: {g}",
            f"Let me think.\n The answer is: {g}.",
            f"The answer is:\n{g}",
            f"The answer is:  {g}\n",
            g,
            f"The answer is: {g} The answer is: {other}",
        ]
    words = gold.split()
    if words:
        out.append("The answer is: " + " ".join(rng.sample(words, max(1, len(words) // 2))))
    out += [
        "The answer is: No, they do not.",
        "The answer is: Yes, they do.",
        "The answer is: Not mentioned in the paper.",
        "The answer is: None of them.",
        "The answer is: .92",
        "The answer is: -.5%",
        "The answer is: (12)",
        "The answer is: 12%",
        "The answer is: $1,234 million",
        "The answer is: approximately 3.6 billion.",
        "The answer is: $",
        "The answer is: inf",
    ]
    try:
        number = float(gold.replace(",", "").replace("%", "").replace("$", ""))
    except ValueError:
        number = None
    if number is not None:
        out += [
            f"The answer is: {number:.2f}%",
            f"The answer is: {number * 100:.1f}%",
            f"The answer is: {number / 100:.4f}",
            f"The answer is: {number:,.3f} million",
            f"The answer is: {str(number).lstrip('0')}",
            f"The answer is: ({abs(number)})",
        ]
    return out


def authors_scores(
    subset: str, entry: dict[str, Any], response: str | None
) -> dict[str, float | None]:
    """The authors' per-question score (None: their scorer leaves the question out)."""
    from uda.eval.utils.feta_eval import feta_evaluate
    from uda.eval.utils.fin_eval import FinQAEm
    from uda.eval.utils.nq_eval import nq_evaluate
    from uda.eval.utils.paper_eval import paper_evaluate
    from uda.eval.utils.tat_eval import TaTQAEmAndF1

    item = {"response": response, "answers": json.loads(json.dumps(entry["answers"]))}
    with redirect_stdout(io.StringIO()):
        if subset == "fin":
            em = FinQAEm()
            em(item)
            return {"finqa_exact_match": float(em.get_overall_metric())}
        if subset == "tat":
            tat = TaTQAEmAndF1()
            tat(item)
            exact, f1, _, _ = tat.get_overall_metric()
            return {"tatqa_exact_match": float(exact), "tatqa_f1": float(f1)}
        gts = item["answers"]
        if len(gts) == 0 or response is None:
            return {_metric(subset): None}
        preds = {"q": {"answer": response.split("The answer is: ")[-1]}}
        evaluate = {"feta": feta_evaluate, "nq": nq_evaluate}.get(subset, paper_evaluate)
        return {_metric(subset): float(evaluate({"q": gts}, preds)["Answer F1"])}


def _metric(subset: str) -> str:
    return {"feta": "feta_answer_f1", "nq": "nq_answer_f1"}.get(subset, "qasper_answer_f1")


def our_scores(
    subset: str, case: BenchmarkCase, response: str | None, options: AnswerOptions
) -> dict[str, float | None]:
    evaluators = {
        "fin": (FinQAExactMatch,),
        "tat": (TatQAExactMatch, TatQAF1),
        "feta": (FetaAnswerF1,),
        "nq": (NqAnswerF1,),
    }.get(subset, (QasperAnswerF1,))
    reply = QueryResponse(query=case.query, mode="replay", answer=response)
    return {
        e.name: asyncio.run(e(options).evaluate(case, reply)).value  # type: ignore[misc]
        for e in evaluators
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--authors", required=True, type=Path)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/datasets/uda"))
    parser.add_argument("--options", default="{}")
    parser.add_argument("--show", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(args.authors))
    options = AnswerOptions.of(json.loads(args.options))
    rng = random.Random(0)
    total_differ = 0
    for subset in SUBSETS:
        data = json.loads(
            (args.data / f"extended_qa_info_bench/bench_{subset}_qa.json").read_text()
        )
        entries = [(doc, e) for doc, es in data.items() for e in es]
        others = [gold_texts(subset, e)[-1] for _, e in entries]
        compared: dict[str, int] = {}
        differ: dict[str, int] = {}
        questions: dict[str, set[str]] = {}
        shown = 0
        for i, (doc, entry) in enumerate(entries):
            q = bench_question(subset, doc, entry, f"{subset}[{i}]")
            case = BenchmarkCase(
                case_id=q.q_uid,
                query=q.question,
                expected=BenchmarkExpected(answers=q.answers, metadata={ANSWER_KEY: q.answer}),
            )
            for response in responses(subset, entry, others[(i + 7) % len(others)], rng):
                theirs = authors_scores(subset, entry, response)
                ours = our_scores(subset, case, response, options)
                for metric, value in theirs.items():
                    compared[metric] = compared.get(metric, 0) + 1
                    mine = ours[metric]
                    same = (value is None and mine is None) or (
                        value is not None and mine is not None and abs(value - mine) < 1e-12
                    )
                    if not same:
                        differ[metric] = differ.get(metric, 0) + 1
                        questions.setdefault(metric, set()).add(q.q_uid)
                        if shown < args.show:
                            shown += 1
                            print(
                                f"  {subset} {q.q_uid} {response!r}: authors {value}, ours {mine}"
                            )
        for metric, n in compared.items():
            d = differ.get(metric, 0)
            total_differ += d
            print(
                f"{subset:10s} {metric:18s} {n:6d} pairs, {d:5d} differ "
                f"({len(questions.get(metric, ()))} of {len(entries)} questions)"
            )
    return 1 if total_differ and not options.deviations() else 0


if __name__ == "__main__":
    raise SystemExit(main())
