"""UDA answers replayed from a predictions file score what the authors' `uda/eval` code gives.

For each of the six subsets, a predictions file in UDA's own response format (`... The
answer is: X`) answers a few real bench questions; every other question of the subset has
a line with a null answer (a missing response). `recipe=replay recipe.predictions=FILE`
scores it through `heta_eval.evaluate` with the benchmark's default evaluators. Each
expected value is worked out by hand from the authors' definitions in the comment beside
it (tests/unit/benchmarks/uda/test_answers.py has the same cases where they repeat); the
summaries check that missing responses count as the authors count them (fin, tat: 0;
paper, feta, nq: left out).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import heta_eval
from heta_eval import EvaluationReport
from heta_eval.benchmarks import UdaBenchmark

from ....conftest import SHARED, load_benchmark
from ....unit.benchmarks.uda.test_answers import FETA_ANSWER

UDA = SHARED / "datasets" / "uda"
LEFT_OUT = None  # the authors leave the question out: skipped, not scored

# subset -> case id -> (response, {metric: expected value}); None responses are missing.
CRAFTED: dict[str, dict[str, tuple[str | None, dict[str, Any]]]] = {
    "fin": {
        # Gold 57% / 0.57484: " 57%" -> 0.57, 0.85% from 0.57484 (< 1%).
        "GS/2016/page_79.pdf-3": ("Let me compute. The answer is: 57%", {"finqa_exact_match": 1.0}),
        # Gold 59% / 0.588: ".59" is read as 0 by the authors' number pattern: no match.
        "GS/2016/page_79.pdf-1": ("The answer is: .59", {"finqa_exact_match": 0.0}),
        # Gold "" / "yes": "Yes." loses its dot and normalises to "yes".
        "JKHY/2008/page_30.pdf-2": ("The answer is: Yes.", {"finqa_exact_match": 1.0}),
        # Gold ".33" reads as 0, but the executed 0.32857 matches 0.33 (0.43%).
        "KMI/2014/page_18.pdf-2": ("The answer is: 0.33", {"finqa_exact_match": 1.0}),
        # A missing response: an empty prediction, 0, and counted.
        "GS/2016/page_161.pdf-1": (None, {"finqa_exact_match": 0.0}),
    },
    "tat": {
        # 92500, arithmetic: " 92,500" -> 92500 -> "92500" as the gold.
        "f1b63dd3002720ebbffa8f36d852d351": (
            "The difference is 92,500. The answer is: 92,500",
            {"tatqa_exact_match": 1.0, "tatqa_f1": 1.0},
        ),
        # 4.07 percent -> gold "0.0407"; ".0407" is a number by its first word that the
        # authors' pattern reads as none: written "None", no token shared.
        "5cff0439063c6a496073ce4b55591d0b": (
            "The answer is: .0407",
            {"tatqa_exact_match": 0.0, "tatqa_f1": 0.0},
        ),
        # Span ['97,500']: "$97,500." loses its dot; $ and , dropped -> "97500" as the gold.
        "d1a4ba4e1af05c60efa468f953a4f8ca": (
            "The answer is: $97,500.",
            {"tatqa_exact_match": 1.0, "tatqa_f1": 1.0},
        ),
        # Span ['LWAY']: a sentence; "the" dropped -> {symbol, is, lway}: P 1/3, R 1 -> 0.5.
        "871af62021e2bd9a6ff15f9b1ba26d79": (
            "The answer is: The symbol is LWAY.",
            {"tatqa_exact_match": 0.0, "tatqa_f1": 0.5},
        ),
        # Arithmetic 0, missing: the authors score " ", which normalises to nothing: F1 0.
        "ec84e524463dfd906ae9c37d739c610f": (None, {"tatqa_exact_match": 0.0, "tatqa_f1": 0.0}),
    },
    "paper_text": {
        # References No, No: " No, they do not." after "The answer is: " starts with "no" -> "No".
        "133eb4aa4394758be5f41744c60c99901b2bc01c": (
            "The answer is: No, they do not.",
            {"qasper_answer_f1": 1.0},
        ),
        # A newline after the colon: the whole response is scored (no yes/no reference):
        # {answer, is, it, maps, data, vectors, to, space, where, linear, separation, is,
        # possible} (13) against the second reference's 20 tokens: 10 shared -> 20/33
        # (the first reference: 9 of 18 -> 18/31).
        "a778b8204a415b295f73b93623d09599f242f202": (
            "The answer is:\nIt maps data vectors to a space where linear separation is possible.",
            {"qasper_answer_f1": 20 / 33},
        ),
        # Missing: left out of the mean.
        "33d2919f3400cd3c6fbb6960d74187ec80b41cd6": (None, {"qasper_answer_f1": LEFT_OUT}),
    },
    "paper_tab": {
        # Reference "single-domain setting" is no yes/no: no alignment; {no, in,
        # singledomain, setting} against {singledomain, setting}: P 1/2, R 1 -> 2/3.
        "ed7a3e7fc1672f85a768613e7d1b419475950ab4": (
            "The answer is: No, in the single-domain setting.",
            {"qasper_answer_f1": 2 / 3},
        ),
        # The second reference exactly, once normalised.
        "4cbe5a36b492b99f9f9fea8081fe4ba10a7a0e94": (
            "The answer is: Linear SVM, RBF SVM and Random Forest",
            {"qasper_answer_f1": 1.0},
        ),
        # The text after the last marker: {f1, of, 8599, on, dlps}; the first reference has
        # 16 tokens, 5 shared: P 1, R 5/16 -> 10/21 (the second: 5 of 17 -> 5/11).
        "ef4dba073d24042f24886580ae77add5326f2130": (
            "Yes. The answer is: F1 of 85.99 on DL-PS",
            {"qasper_answer_f1": 10 / 21},
        ),
        "5eda469a8a77f028d0c5f1acd296111085614537": (None, {"qasper_answer_f1": LEFT_OUT}),
    },
    "feta": {
        # 12844, a newline after the colon: the whole response, 8 of its 11 tokens among the
        # reference's 18 -> 16/29 = 0.5517 (as in the unit test_answers).
        "12844": (FETA_ANSWER, {"feta_answer_f1": 16 / 29}),
        # {good, morning, miss, dove} against the reference's 19 tokens (articles dropped):
        # P 1, R 4/19 -> 8/23.
        "19050": ("The answer is: Good Morning, Miss Dove", {"feta_answer_f1": 8 / 23}),
        # A yes/no sentence (no alignment on feta): {yes, oklahoma, defenders} against 12
        # tokens, 2 shared: P 2/3, R 1/6 -> 4/15.
        "1488": ("The answer is: Yes, the Oklahoma Defenders.", {"feta_answer_f1": 4 / 15}),
        "17035": (None, {"feta_answer_f1": LEFT_OUT}),
    },
    "nq": {
        # Short answer {episode, fifteen, million, merits}: P 1, R 3/4 -> 6/7.
        "-6718102858366318183": (
            "The answer is: Fifteen Million Merits",
            {"nq_answer_f1": 6 / 7},
        ),
        # A newline after the colon: {answer, is, november, 16, 1907} against the short
        # answer {november, 16, 1907}: P 3/5, R 1 -> 3/4 (the long answer: 3/7 -> 1/2).
        "-6235538092288743840": ("The answer is:\nNovember 16, 1907", {"nq_answer_f1": 0.75}),
        # A yes/no sentence: {yes, jennifer, jones} against the short {jennifer, jones}: 0.8.
        "6031977400415327548": ("The answer is: Yes, Jennifer Jones.", {"nq_answer_f1": 0.8}),
        "3340122335577060793": (None, {"nq_answer_f1": LEFT_OUT}),
    },
}

# subset -> metric -> (cases scored, mean) over the whole subset, the uncrafted questions
# being missing responses: fin and tat score them 0; paper, feta and nq leave them out.
SUMMARIES: dict[str, dict[str, tuple[int, float]]] = {
    "fin": {"finqa_exact_match": (451, 3 / 451)},
    "tat": {"tatqa_exact_match": (9, 2 / 9), "tatqa_f1": (9, 2.5 / 9)},
    "paper_text": {"qasper_answer_f1": (2, (1 + 20 / 33) / 2)},
    "paper_tab": {"qasper_answer_f1": (3, (2 / 3 + 1 + 10 / 21) / 3)},
    "feta": {"feta_answer_f1": (3, (16 / 29 + 8 / 23 + 4 / 15) / 3)},
    "nq": {"nq_answer_f1": (3, (6 / 7 + 0.75 + 0.8) / 3)},
}


def _predictions(path: Path, subset: str, tmp_path: Path) -> None:
    """One line per case of the subset: the crafted response, else a missing one."""
    bench = UdaBenchmark(subset=subset, data_root=UDA)
    _, cases, units = load_benchmark(bench, tmp_path)
    unit_of = {case_id: unit.unit_id for unit in units for case_id in unit.case_ids}
    assert set(CRAFTED[subset]) <= set(unit_of), "a crafted case is not in the bench"
    lines = [
        {
            "case_id": case.case_id,
            "unit_id": unit_of[case.case_id],
            "answer": CRAFTED[subset].get(case.case_id, (None, {}))[0],
            "retrieved": [],
        }
        for case in cases
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, EvaluationReport]:
    """Each subset's predictions file, replayed: subset -> report."""
    if not (UDA / "extended_qa_info_bench" / "bench_nq_qa.json").is_file():
        pytest.skip(f"the UDA dataset tree is not at {UDA}")
    root = tmp_path_factory.mktemp("uda-replay")
    reports = {}
    for subset in CRAFTED:
        predictions = root / f"{subset}.jsonl"
        _predictions(predictions, subset, root / f"load-{subset}")
        reports[subset] = heta_eval.evaluate(
            overrides=[
                f"paths.root={root / 'out'}",
                "benchmark=uda",
                f"benchmark.subset={subset}",
                f"benchmark.data_root={UDA}",
                "recipe=replay",
                f"recipe.predictions={predictions}",
                "tracking=none",
                "runner.progress=off",
            ]
        )
    return reports


@pytest.mark.slow
@pytest.mark.parametrize("subset", list(CRAFTED))
def test_replayed_answers_score_as_the_authors_code(
    replayed: dict[str, EvaluationReport], subset: str
) -> None:
    report = replayed[subset]
    assert not report.failed_cases
    scores = {
        r.case_id: {s.name.removeprefix("replay."): s for s in r.scores}
        for r in report.case_results
    }
    for case_id, (_, expected) in CRAFTED[subset].items():
        for metric, value in expected.items():
            score = scores[case_id][metric]
            if value is LEFT_OUT:
                assert score.value is None and score.skipped_reason, (case_id, metric)
            else:
                assert score.value == pytest.approx(value), (case_id, metric, score)
    for metric, (scored, mean) in SUMMARIES[subset].items():
        assert report.score_details[f"replay.{metric}"].scored == scored
        assert report.score_summary[f"replay.{metric}"] == pytest.approx(mean)
